"""The scripted model's HTTP server: 127.0.0.1 on an ephemeral port, in a thread of the test.

Every request is recorded in the script's log before it is routed (method, path, query, headers,
the body bytes as received), then the first wire in WIRES that claims it answers it; a request
no wire claims gets a 404 and stays in the log as "unrouted", so a test sees what a host asked
for that the model does not serve.
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit

from tests.hosts.model import anthropic, chat, gemini, responses
from tests.hosts.model.script import Exchange, Script
from tests.hosts.model.wire import Reply, Wire, json_reply

# One line per wire; the first that claims a request answers it.
WIRES: list[Wire] = [anthropic.WIRE, responses.WIRE, chat.WIRE, gemini.WIRE]


def _decoded(body: bytes, encoding: str | None) -> bytes:
    """The body with its Content-Encoding undone (gzip, deflate; zstd where Python has it)."""
    if not encoding or encoding == "identity":
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "zstd":
        from compression import zstd  # type: ignore[import-not-found]  # Python 3.14+

        data: bytes = zstd.decompress(body)
        return data
    raise ValueError(f"Content-Encoding {encoding!r} is not supported by the scripted model")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the script's log is the record."""

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _serve(self) -> None:
        script = self.server.model.script
        url = urlsplit(self.path)
        exchange = Exchange(
            self.command, url.path, url.query, list(self.headers.items()), self._body()
        )
        script.record(exchange)
        reply = self._answer(exchange, script)
        self._send(reply)

    def _answer(self, exchange: Exchange, script: Script) -> Reply:
        for wire in self.server.model.wires:
            route = wire.route(exchange)
            if route is None:
                continue
            exchange.wire = wire.name
            if exchange.body:
                try:
                    raw = _decoded(exchange.body, exchange.header("Content-Encoding"))
                    exchange.json = json.loads(raw)
                except ValueError as exc:
                    exchange.error = f"unreadable body: {exc}"
                    return json_reply(400, {"error": {"message": exchange.error}})
            return wire.handle(route, exchange, script)
        return json_reply(
            404,
            {"error": {"message": f"the scripted model has no {exchange.method} {exchange.path}"}},
        )

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        if not reply.stream:
            data = b"".join(reply.chunks)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in reply.chunks:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            self.wfile.flush()
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = _serve


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    model: ModelServer


class ModelServer:
    """The scripted model on 127.0.0.1:0. `play(script)` sets what it answers; `url` is its
    base URL (no trailing slash)."""

    def __init__(self, script: Script | None = None, wires: list[Wire] | None = None) -> None:
        self.script = script if script is not None else Script([])
        self.wires = list(WIRES if wires is None else wires)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    def play(self, script: Script) -> Script:
        self.script = script
        return script

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the model server is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> ModelServer:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.model = self
        self._server = server
        self._thread = threading.Thread(
            target=server.serve_forever, name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join()
        self._server = self._thread = None

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
