"""The gateway's HTTP core: forward each request to its provider, stream the answer back.

Method, path, query and headers go upstream as the host sent them (hop-by-hop headers and the
gateway's own token aside); the body too, unless a wire format (`Gateway.wires`) reads it
and a squash applies (`server.gateway.recorder`). The answer is relayed as it arrives, byte
for byte and unparsed: JSON, server-sent events (pings and mid-stream errors included), any
status. Whatever fails in reading, recording or rewriting, the host's own bytes are forwarded
and the reason is logged (never a body, never a key): the gateway never breaks a call that
would have worked without it.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import httpx2
from starlette.types import Message, Receive, Scope, Send

from server.gateway.recorder import Prepared, Recorder
from server.gateway.wires import WireFormat
from server.http.guards import respond
from server.http.tenants import tenant_of

log = logging.getLogger("frs-mcp.gateway")

DEFAULT_ANTHROPIC = "https://api.anthropic.com"
DEFAULT_OPENAI = "https://api.openai.com"
#: Paths that go to the OpenAI upstream; every other path goes to Anthropic's.
OPENAI_PATHS = ("/v1/responses", "/v1/chat/completions", "/v1/completions", "/v1/embeddings")
#: The header a remote host sends the gateway's own token in (Authorization is the
#: provider's key, and passes through).
TOKEN_HEADER = "x-frs-token"
#: New units recorded before a call is forwarded; more wait until its answer has streamed.
EARLY_UNITS = 64
_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
        TOKEN_HEADER,
    }
)


@dataclass(frozen=True, slots=True)
class Route:
    upstream: str  # base URL, no trailing slash
    wire: WireFormat | None  # the wire that reads a POST to this path; None: never read


@dataclass(frozen=True, slots=True)
class Upstreams:
    anthropic: str = DEFAULT_ANTHROPIC
    openai: str = DEFAULT_OPENAI


@dataclass(slots=True)
class Traffic:
    """What went through, for the log and the tests: bytes and estimated tokens per call."""

    requests: int = 0
    rewritten: int = 0
    failed: int = 0  # reads or rewrites that fell back to the original bytes
    sent_bytes: int = 0  # what hosts sent
    forwarded_bytes: int = 0  # what went upstream
    saved_tokens: int = 0  # estimated tokens the rewrites left out, summaries counted


class Gateway:
    """The ASGI app: `routes` picks the upstream and wire format by path."""

    def __init__(
        self,
        recorder: Recorder,
        upstreams: Upstreams,
        client: httpx2.AsyncClient,
        wires: Mapping[str, WireFormat],
        tenants: Mapping[str, str] | None = None,
        rewrite: bool = True,
    ) -> None:
        self.recorder = recorder
        self.upstreams = upstreams
        self.client = client
        self.wires = dict(wires)
        self.tenants = dict(tenants or {})
        self.rewrite = rewrite
        self.traffic = Traffic()
        self._recording = 0
        self._settled = anyio.Event()
        self._settled.set()

    async def settled(self) -> None:
        """Wait until every answered request's recording is done (tests, shutdown)."""
        await self._settled.wait()

    def route(self, path: str) -> Route:
        """The upstream a path goes to, and the wire format that reads it (`WireFormat.path`
        equal to it), if any."""
        wire = next((w for w in self.wires.values() if w.path == path), None)
        if path.startswith(OPENAI_PATHS):
            return Route(self.upstreams.openai.rstrip("/"), wire)
        return Route(self.upstreams.anthropic.rstrip("/"), wire)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        named = {k.lower(): v for k, v in headers}
        if self.tenants and tenant_of(self.tenants, named.get(TOKEN_HEADER, "")) is None:
            await _answer(send, 401, f"send the gateway's token in the {TOKEN_HEADER} header")
            return
        body = await _body(receive)
        route = self.route(scope["path"])
        prepared = Prepared(body)
        # A compressed body is forwarded as it came: reading it would mean writing it again.
        plain = named.get("content-encoding", "identity").lower() == "identity"
        if plain and route.wire is not None and scope["method"] == "POST":
            prepared = await self._prepare(route.wire, body, named)
        self.traffic.requests += 1
        self.traffic.sent_bytes += len(body)
        self.traffic.forwarded_bytes += len(prepared.body)
        if prepared.body is not body:
            self.traffic.rewritten += 1
            self.traffic.saved_tokens += prepared.saved_tokens
            log.info(
                "%s %s: host sent %d bytes, forwarded %d (~%d tokens fewer: squashes %s)",
                scope["method"],
                scope["path"],
                len(body),
                len(prepared.body),
                prepared.saved_tokens,
                ", ".join(f"SQ.{n}" for n in prepared.plan.applied),
            )
        url = route.upstream + scope["path"]
        if scope.get("query_string"):
            url += "?" + scope["query_string"].decode("latin-1")
        forwarded = [(k, v) for k, v in headers if k.lower() not in _HOP]
        if prepared.beta is not None:
            forwarded = with_beta(forwarded, prepared.beta)
        # Pending from before the answer starts, so `settled` never misses it.
        if self._recording == 0:
            self._settled = anyio.Event()
        self._recording += 1
        # A few new messages are recorded while the call goes upstream, and the end of the
        # answer waits for them (`Held`): the frs tools the model calls in its answer then see
        # the thread up to that answer. A long backlog (a resumed conversation's first call)
        # is recorded after the answer, off its path.
        early = prepared.fresh <= EARLY_UNITS
        tee = Tee() if route.wire is not None and prepared.belongs else None
        try:
            async with anyio.create_task_group() as tg:
                recorded = anyio.Event()
                if early:
                    tg.start_soon(self._record_then, prepared, recorded)
                else:
                    recorded.set()
                await self._relay(
                    scope["method"], url, forwarded, prepared.body, send, tee, recorded
                )
        finally:
            with anyio.CancelScope(shield=True):
                if not early:
                    await self._record(prepared)
                if tee is not None and route.wire is not None:
                    await self._record_answer(route.wire, prepared, tee)
                await self._add_call(prepared, body)
                await self._squash_on_its_own(prepared)
                self._recording -= 1
                if self._recording == 0:
                    self._settled.set()

    async def _record_answer(self, wire: WireFormat, prepared: Prepared, tee: Tee) -> None:
        """Record the answer from the copy of the stream, once it has all reached the host."""
        raw = tee.complete()
        if raw is None:
            return
        try:
            answer = wire.answer_of(raw, tee.content_type)
            if answer is not None:
                await self.recorder.record_answer(prepared, answer)
        except Exception as exc:  # the next request brings the answer in any case
            _log_failure("recording the answer", exc)

    async def _add_call(self, prepared: Prepared, sent: bytes) -> None:
        """The request's row of `gateway_calls`, once its answer has gone to the host."""
        try:
            await self.recorder.add_call(prepared, sent)
        except Exception as exc:  # the row is a record; the answer went in any case
            _log_failure("storing the call", exc)

    async def _squash_on_its_own(self, prepared: Prepared) -> None:
        """The autopilot's turn, once the call is recorded: its batch reaches the model from
        the conversation's next call."""
        try:
            await self.recorder.squash_on_its_own(prepared)
        except Exception as exc:  # a batch not made is a saving missed, never an error
            _log_failure("the autopilot", exc, "no batch this time")

    async def _record_then(self, prepared: Prepared, recorded: anyio.Event) -> None:
        with anyio.CancelScope(shield=True):  # a host that hangs up does not cut a write
            await self._record(prepared)
        recorded.set()

    async def _record(self, prepared: Prepared) -> None:
        try:
            await self.recorder.record(prepared)
        except Exception as exc:  # recording never stands between the host and its answer
            _log_failure("recording", exc)

    async def _prepare(self, wire: WireFormat, body: bytes, headers: Mapping[str, str]) -> Prepared:
        try:
            return await self.recorder.prepare(wire, body, headers, rewrite=self.rewrite)
        except Exception as exc:  # whatever went wrong, the host's bytes go upstream
            self.traffic.failed += 1
            _log_failure(f"{wire.name} request", exc)
            return Prepared(body)

    async def _relay(
        self,
        method: str,
        url: str,
        headers: list[tuple[str, str]],
        body: bytes,
        send: Send,
        tee: Tee | None = None,
        recorded: anyio.Event | None = None,
    ) -> None:
        request = httpx2.Request(method, url, headers=headers, content=body)
        started = time.monotonic()
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            log.warning("upstream %s unreachable: %s", url.split("?")[0], type(exc).__name__)
            await _answer(send, 502, f"the gateway could not reach {url.split('?')[0]}")
            return
        try:
            kept = [
                (k, v)
                for k, v in response.headers.raw
                if k.lower().decode("latin-1") not in _HOP or k.lower() == b"content-length"
            ]
            await send(
                {"type": "http.response.start", "status": response.status_code, "headers": kept}
            )
            log.debug(
                "upstream answered %d after %.1f ms",
                response.status_code,
                (time.monotonic() - started) * 1000,
            )
            if tee is not None:
                tee.start(response.status_code, response.headers)
            held = Held(recorded)
            async for chunk in response.aiter_raw():
                if tee is not None:
                    tee.add(chunk)  # a reference kept, read after the answer is sent
                out = held.let_through(chunk)
                if out:
                    await send({"type": "http.response.body", "body": out, "more_body": True})
            last = await held.rest()
            await send({"type": "http.response.body", "body": last, "more_body": False})
            if tee is not None:
                tee.done = True
        except httpx2.HTTPError as exc:
            # The status is already with the host: end its stream; it sees a cut answer, as
            # it would have from the provider.
            log.warning("upstream stream broke: %s", type(exc).__name__)
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            await response.aclose()


def with_beta(headers: list[tuple[str, str]], beta: str) -> list[tuple[str, str]]:
    """The headers with `beta` among the `anthropic-beta` values: added to the host's header,
    comma-separated as the API combines betas, or as a header of its own when it sent none.
    https://platform.claude.com/docs/en/build-with-claude/preserved-thinking (several betas
    in one header; the host's own values are passed through)."""
    out, found = [], False
    for name, value in headers:
        if name.lower() == "anthropic-beta" and not found:
            found = True
            values = [v.strip() for v in value.split(",") if v.strip()]
            if beta not in values:
                value = ",".join([*values, beta])
        out.append((name, value))
    return out if found else [*out, ("anthropic-beta", beta)]


class Held:
    """What of an answer waits for its request's new messages to be stored.

    A host may act on an answer before its stream ends (Claude Code runs a tool as soon as
    its block stops), and the frs tools it then calls must find the thread up to that answer.
    The answer still streams at once: while the recording runs (a few milliseconds; the model
    takes longer to answer), only what would let the host act is kept back, from the first
    block's, item's or message's end on, and the last few bytes of what came (the end of a JSON
    answer, or a stop cut between two chunks). Once the recording is done nothing is held."""

    #: Where a host may act: Anthropic's stops, a finished Responses item, a Chat Completions
    #: chunk that ends a choice (a null finish_reason does not match).
    MARKS = (
        b"content_block_stop",
        b"message_stop",
        b"response.output_item.done",
        b'"finish_reason":"',
    )
    TAIL = max(map(len, MARKS)) - 1

    def __init__(self, recorded: anyio.Event | None) -> None:
        self.recorded = recorded
        self.kept = b""
        self.stopped = False  # a `message_stop` came: everything after waits too

    def let_through(self, chunk: bytes) -> bytes:
        """The bytes that may go to the host now."""
        if self.recorded is None or self.recorded.is_set():
            out, self.kept = self.kept + chunk, b""
            return out
        if self.stopped:
            self.kept += chunk
            return b""
        pending = self.kept + chunk
        found = [at for at in map(pending.find, self.MARKS) if at >= 0]
        if found:
            self.stopped = True
            cut = pending.rfind(b"\n", 0, min(found)) + 1  # from the start of its line
        else:
            cut = max(len(pending) - self.TAIL, 0)
        out, self.kept = pending[:cut], pending[cut:]
        return out

    async def rest(self) -> bytes:
        """What was held, once the recording is done."""
        if self.recorded is not None:
            await self.recorded.wait()
        out, self.kept = self.kept, b""
        return out


class Tee:
    """A copy of an answer's chunks, kept (not read) while they stream to the host, for the
    answer to be recorded once they have all gone: only a plain, successful answer of at most
    `LIMIT` bytes is kept."""

    LIMIT = 16 * 1024 * 1024

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.size = 0
        self.content_type = ""
        self.kept = False
        self.done = False

    def start(self, status: int, headers: httpx2.Headers) -> None:
        encoding = headers.get("content-encoding", "identity").lower()
        self.kept = status == 200 and encoding == "identity"
        self.content_type = headers.get("content-type", "").lower()

    def add(self, chunk: bytes) -> None:
        if not self.kept:
            return
        self.size += len(chunk)
        if self.size > self.LIMIT:
            self.kept, self.chunks = False, []
            return
        self.chunks.append(chunk)

    def complete(self) -> bytes | None:
        """The whole answer, or None when it was not kept or did not end."""
        return b"".join(self.chunks) if self.kept and self.done else None


async def _body(receive: Receive) -> bytes:
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            break
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


async def _answer(send: Send, status: int, text: str) -> None:
    """An error of the gateway's own, in the shape both providers' clients read."""
    body = json.dumps(
        {"type": "error", "error": {"type": "gateway_error", "message": f"frs-mcp gateway: {text}"}}
    ).encode()
    await respond(send, status, body, b"application/json")


def _log_failure(
    what: str, exc: BaseException, then: str = "forwarded as the host sent it"
) -> None:
    """Why a request went as the host sent it (or what else did not happen: `then`): the
    error's type and where it was raised; never its message, which could quote a body or a
    key."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f"{frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno}" if frames else "?"
    log.warning("%s: %s at %s; %s", what, type(exc).__name__, where, then)
