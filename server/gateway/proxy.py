"""The gateway's HTTP core: forward each request to its provider, stream the answer back.

Method, path, query and headers go upstream as the host sent them (hop-by-hop headers and the
gateway's own token aside); the body too, unless a wire format (`Gateway.wires`) reads it
and a squash applies (`server.gateway.recorder`). The answer is relayed as it arrives, byte
for byte and unparsed: JSON, server-sent events (pings and mid-stream errors included), any
status. Whatever fails in reading, recording or rewriting, the host's own bytes are forwarded
and the reason is logged (never a body, never a key): the gateway never breaks a call that
would have worked without it.

What it never does: send a request anywhere but the configured upstream (a target is a path,
`server.gateway.targets`), forward a body that did not arrive whole, match one caller's
request to another's conversation (each tenant has its recorder, `Recorders`; without tokens
the credential tells callers apart, `server.gateway.callers`), go on with an upstream request
whose host hung up, or end cleanly an answer the upstream cut.
"""

from __future__ import annotations

import json
import logging
import time
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass

import anyio
import httpx2
from starlette.types import Message, Receive, Scope, Send

from frs.model import LOCAL_TENANT, GatewayCall, SessionId
from frs.owners import Caller
from server.gateway.callers import caller_of
from server.gateway.recorder import Prepared, Recorder
from server.gateway.targets import Upstream, path_of, upstream_of
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
#: Bytes of request bodies the gateway reads (parses, records, rewrites) at once by default.
#: Reading one holds about ten times its size until its call settles (the text, the parsed
#: request, the units, the rewrite, the store's pages), forwarding one unread under three:
#: past this, a request goes as the host sent it, so concurrent large requests cannot take
#: the gateway's memory (64 MiB read at once: some 650 MiB at the peak).
READ_BUDGET = 64 << 20
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
    upstream: Upstream
    wire: WireFormat | None  # the wire that reads a POST to this path; None: never read


@dataclass(frozen=True, slots=True)
class _Exchange:
    """One request as it goes upstream, and the host's side of the connection."""

    method: str
    url: httpx2.URL
    headers: list[tuple[str, str]]
    receive: Receive
    send: Send


@dataclass(frozen=True, slots=True)
class Upstreams:
    """Each provider's base URL (checked at start: `server.gateway.targets.upstream_of`)."""

    anthropic: str = DEFAULT_ANTHROPIC
    openai: str = DEFAULT_OPENAI


@dataclass(slots=True)
class Traffic:
    """What went through, for the log and the tests: bytes and estimated tokens per call."""

    requests: int = 0
    rewritten: int = 0
    failed: int = 0  # reads or rewrites that fell back to the original bytes
    incomplete: int = 0  # requests whose body never arrived whole: not forwarded
    unread: int = 0  # requests forwarded unread: the bodies being read were at the budget
    sent_bytes: int = 0  # what hosts sent
    forwarded_bytes: int = 0  # what went upstream
    saved_tokens: int = 0  # estimated tokens the rewrites left out (after each answer)


class Recorders:
    """One recorder per tenant, made on the tenant's first request: a tenant's conversations
    are stored under it (`frs.model.Scope.tenant`), where its own MCP server and viewer see
    them, and its recorder's memory (locks, threads, the last bodies) is its own."""

    def __init__(self, make: Callable[[str], Recorder]) -> None:
        self.make = make
        self.made: dict[str, Recorder] = {}

    def of(self, tenant: str) -> Recorder:
        found = self.made.get(tenant)
        if found is None:
            found = self.made[tenant] = self.make(tenant)
        return found


class Gateway:
    """The ASGI app: `routes` picks the upstream and wire format by path; the caller's token
    (`tenants`) its tenant, and so the recorder its conversations go to."""

    def __init__(
        self,
        recorders: Recorders,
        upstreams: Upstreams,
        client: httpx2.AsyncClient,
        wires: Mapping[str, WireFormat],
        tenants: Mapping[str, str] | None = None,
        rewrite: bool = True,
        read_budget: int = READ_BUDGET,
    ) -> None:
        """`read_budget`: bytes of request bodies read at once; a request that would go
        over it is forwarded unread (one larger than the budget is read when it is alone)."""
        self.recorders = recorders
        self.upstreams = upstreams
        self.client = client
        self.wires = dict(wires)
        self.tenants = dict(tenants or {})
        self.rewrite = rewrite
        self.traffic = Traffic()
        self.read_budget = read_budget
        self._reading = 0  # bytes of the bodies read whose calls have not settled yet
        self._recording = 0
        self._settled = anyio.Event()
        self._settled.set()

    @property
    def recorder(self) -> Recorder:
        """The local tenant's: every caller's, on a gateway without tokens."""
        return self.recorders.of(LOCAL_TENANT)

    async def settled(self) -> None:
        """Wait until every answered request's recording is done (tests, shutdown)."""
        await self._settled.wait()

    def route(self, path: str) -> Route:
        """The upstream a path goes to, and the wire format that reads it (`WireFormat.path`
        equal to it), if any."""
        wire = next((w for w in self.wires.values() if w.path == path), None)
        if path.startswith(OPENAI_PATHS):
            return Route(upstream_of(self.upstreams.openai), wire)
        return Route(upstream_of(self.upstreams.anthropic), wire)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]]
        named = {k.lower(): v for k, v in headers}
        admitted = await self._admitted(scope, named, send)
        if admitted is None:
            return
        tenant, path = admitted
        recorder = self.recorders.of(tenant or LOCAL_TENANT)
        body = await _body(receive)
        if body is None:
            self.traffic.incomplete += 1
            log.info("a host hung up before its request's body arrived whole: not forwarded")
            return
        route = self.route(scope["path"])
        prepared = Prepared(body)
        # A compressed body is forwarded as it came: reading it would mean writing it again.
        plain = named.get("content-encoding", "identity").lower() == "identity"
        wire = route.wire if self._may_read(scope["method"], route, plain, body) else None
        read = len(body) if wire is not None else 0
        self._reading += read
        try:
            if wire is not None:
                caller = caller_of(named, tenant_says=bool(self.tenants))
                prepared = await self._prepare(recorder, wire, body, named, caller)
            self._count(scope, body, prepared)
            forwarded = [(k, v) for k, v in headers if k.lower() not in _HOP]
            if prepared.beta is not None:
                forwarded = with_beta(forwarded, prepared.beta)
            exchange = _Exchange(
                scope["method"],
                route.upstream.url(path, scope.get("query_string", b"")),
                forwarded,
                receive,
                send,
            )
            await self._forward(_Call(recorder, route, prepared, body), exchange)
        finally:
            self._reading -= read

    def _may_read(self, method: str, route: Route, plain: bool, body: bytes) -> bool:
        """Whether a wire's body may be read: a POST, not compressed (reading it would mean
        writing it again), and the bodies being read stay within the budget (or none is being
        read). Else it goes as the host sent it, and its messages are recorded from the
        conversation's next request."""
        if method != "POST" or not plain or route.wire is None:
            return False
        if self._reading == 0 or self._reading + len(body) <= self.read_budget:
            return True
        self.traffic.unread += 1
        log.warning(
            "a request of %d bytes forwarded unread: %d bytes of other requests are being "
            "read (--read-budget %d)",
            len(body),
            self._reading,
            self.read_budget,
        )
        return False

    async def _admitted(
        self, scope: Scope, named: Mapping[str, str], send: Send
    ) -> tuple[str | None, bytes] | None:
        """The caller's tenant (None without tokens) and the request's path; None when the
        request was refused (answered here): no gateway token, or a target not a path."""
        tenant = tenant_of(self.tenants, named.get(TOKEN_HEADER, "")) if self.tenants else None
        if self.tenants and tenant is None:
            await error_answer(send, 401, f"send the gateway's token in the {TOKEN_HEADER} header")
            return None
        path = path_of(scope.get("raw_path") or scope["path"].encode(), scope["path"])
        if path is None:
            # The target is not logged: it could hold a key in its query.
            log.warning("refused a request whose target is not a path (origin form)")
            await error_answer(
                send,
                400,
                "the request target must be a path such as /v1/messages: the gateway sends "
                "every request to its configured upstream, and to nowhere a request names",
            )
            return None
        return tenant, path

    def _count(self, scope: Scope, body: bytes, prepared: Prepared) -> None:
        self.traffic.requests += 1
        self.traffic.sent_bytes += len(body)
        self.traffic.forwarded_bytes += len(prepared.body)
        if prepared.body is not body:
            self.traffic.rewritten += 1
            log.info(
                "%s %s: host sent %d bytes, forwarded %d (squashes %s)",
                scope["method"],
                scope["path"],
                len(body),
                len(prepared.body),
                ", ".join(f"SQ.{n}" for n in prepared.plan.applied),
            )

    async def _forward(self, call: _Call, exchange: _Exchange) -> None:
        """Relay the call, recording beside it, then settle what it leaves behind: the
        answer, its row, the autopilot's batch, the conversation's turn freed."""
        prepared = call.prepared
        # Pending from before the answer starts, so `settled` never misses it.
        if self._recording == 0:
            self._settled = anyio.Event()
        self._recording += 1
        # A few new messages are recorded while the call goes upstream, and the end of the
        # answer waits for them (`Held`): the frs tools the model calls in its answer then see
        # the thread up to that answer. A long backlog (a resumed conversation's first call)
        # is recorded after the answer, off its path.
        early = prepared.fresh <= EARLY_UNITS
        tee = Tee() if call.route.wire is not None and prepared.belongs else None
        turn = Turn(call.recorder, prepared)
        try:
            async with anyio.create_task_group() as tg:
                recorded = anyio.Event()
                if early:
                    tg.start_soon(self._record_then, call.recorder, prepared, recorded)
                else:
                    recorded.set()
                ending = turn.take if prepared.belongs else None
                await self._relay(exchange, prepared.body, tee, Held(recorded, ending))
        finally:
            with anyio.CancelScope(shield=True):
                await self._settle(call, tee, turn, early)
                self._recording -= 1
                if self._recording == 0:
                    self._settled.set()

    async def _settle(self, call: _Call, tee: Tee | None, turn: Turn, early: bool) -> None:
        recorder, prepared = call.recorder, call.prepared
        if not early:
            await self._record(recorder, prepared)
            if prepared.belongs and turn.session_id is None:
                await turn.take()  # a first call's session exists only now
        if tee is not None and call.route.wire is not None:
            await self._record_answer(recorder, call.route.wire, prepared, tee)
        stored = await self._add_call(recorder, prepared, call.body)
        if turn.session_id is not None and stored is not None:
            await self._squash_on_its_own(recorder, prepared, stored)
        await turn.end()

    async def _record_answer(
        self, recorder: Recorder, wire: WireFormat, prepared: Prepared, tee: Tee
    ) -> None:
        """Record the answer from the copy of the stream, once it has all reached the host."""
        raw = tee.complete()
        if raw is None:
            return
        try:
            answer = wire.answer_of(raw, tee.content_type)
            if answer is not None:
                await recorder.record_answer(prepared, answer)
        except Exception as exc:  # the next request brings the answer in any case
            _log_failure("recording the answer", exc)

    async def _add_call(
        self, recorder: Recorder, prepared: Prepared, sent: bytes
    ) -> GatewayCall | None:
        """The request's row of `gateway_calls`, once its answer has gone to the host."""
        try:
            call = await recorder.add_call(prepared, sent)
        except Exception as exc:  # the row is a record; the answer went in any case
            _log_failure("storing the call", exc)
            return None
        if call is not None:
            self.traffic.saved_tokens += call.sent_tokens - call.forwarded_tokens
        return call

    async def _squash_on_its_own(
        self, recorder: Recorder, prepared: Prepared, call: GatewayCall
    ) -> None:
        """The autopilot's turn, once the call is recorded: its batch reaches the model from
        the conversation's next call."""
        try:
            await recorder.squash_on_its_own(prepared, call)
        except Exception as exc:  # a batch not made is a saving missed, never an error
            _log_failure("the autopilot", exc, "no batch this time")

    async def _record_then(
        self, recorder: Recorder, prepared: Prepared, recorded: anyio.Event
    ) -> None:
        with anyio.CancelScope(shield=True):  # a host that hangs up does not cut a write
            await self._record(recorder, prepared)
        recorded.set()

    async def _record(self, recorder: Recorder, prepared: Prepared) -> None:
        try:
            await recorder.record(prepared)
        except Exception as exc:  # recording never stands between the host and its answer
            _log_failure("recording", exc)

    async def _prepare(
        self,
        recorder: Recorder,
        wire: WireFormat,
        body: bytes,
        headers: Mapping[str, str],
        caller: Caller,
    ) -> Prepared:
        try:
            return await recorder.prepare(wire, body, headers, self.rewrite, caller)
        except Exception as exc:  # whatever went wrong, the host's bytes go upstream
            self.traffic.failed += 1
            _log_failure(f"{wire.name} request", exc)
            return Prepared(body)

    async def _relay(self, exchange: _Exchange, body: bytes, tee: Tee | None, held: Held) -> None:
        """Forward the request and stream its answer back. A host that hangs up stops it at
        once: the upstream request is cancelled and its connection closed (httpcore closes a
        connection whose exchange was cut), so the provider stops generating, and nothing of
        it outlives the request."""
        answered = anyio.Event()  # the end of the answer is on its way to the host

        async def watch(scope: anyio.CancelScope) -> None:
            # After the body, the server's receive() answers only when the host is gone (or
            # the answer is complete, which `answered` tells apart).
            while (await exchange.receive())["type"] != "http.disconnect":
                pass
            if not answered.is_set():
                log.info("the host hung up: its upstream request is cancelled")
                scope.cancel()

        async with anyio.create_task_group() as tg:
            tg.start_soon(watch, tg.cancel_scope)
            await self._exchange(exchange, body, tee, held, answered)
            tg.cancel_scope.cancel()

    async def _exchange(
        self,
        exchange: _Exchange,
        body: bytes,
        tee: Tee | None,
        held: Held,
        answered: anyio.Event,
    ) -> None:
        send, url = exchange.send, exchange.url
        request = httpx2.Request(exchange.method, url, headers=exchange.headers, content=body)
        started = time.monotonic()
        where = str(url.copy_with(query=None))
        try:
            response = await self.client.send(request, stream=True)
        except httpx2.HTTPError as exc:
            log.warning("upstream %s failed: %s", where, type(exc).__name__)
            status, text = self._failure(exc, where)
            await error_answer(send, status, text)
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
            if await _streamed(response, send, tee, held, where):
                last = await held.rest()
                answered.set()
                await send({"type": "http.response.body", "body": last, "more_body": False})
                if tee is not None:
                    tee.done = True
        finally:
            with anyio.CancelScope(shield=True):  # a host that hung up still closes it
                await response.aclose()

    def _failure(self, exc: httpx2.HTTPError, where: str) -> tuple[int, str]:
        """The status and words for the host when an upstream request failed before its
        answer began: 504 when a timeout ran out (naming the flag that sets it), else 502."""
        timeout = self.client.timeout
        if isinstance(exc, httpx2.ConnectTimeout | httpx2.PoolTimeout):
            return 504, (
                f"the gateway could not connect to {where} within {timeout.connect:g} s "
                "(--connect-timeout)"
            )
        if isinstance(exc, httpx2.WriteTimeout):
            return 504, (
                f"{where} took none of the request's body for {timeout.write:g} s "
                "(--upstream-timeout); the request was given up"
            )
        if isinstance(exc, httpx2.TimeoutException):
            return 504, (
                f"{where} sent nothing for {timeout.read:g} s (--upstream-timeout); the "
                "request was given up"
            )
        return 502, f"the gateway could not reach {where}"


async def _streamed(
    response: httpx2.Response, send: Send, tee: Tee | None, held: Held, where: str
) -> bool:
    """Relay the answer's body as it comes, all but what `held` keeps back; False when the
    upstream cut it. The status is with the host already then: what came goes to it, and
    its stream is cut as the provider's was (the app ends without the answer's end, so the
    server closes the connection short of it): a stream ended cleanly would pass for a
    whole answer."""
    try:
        async for chunk in response.aiter_raw():
            if tee is not None:
                tee.add(chunk)  # a reference kept, read after the answer is sent
            out = held.let_through(chunk)
            if out:
                await send({"type": "http.response.body", "body": out, "more_body": True})
    except httpx2.HTTPError as exc:
        log.warning(
            "upstream %s broke mid-answer (%s): cut for the host too", where, type(exc).__name__
        )
        rest = await held.rest(whole=False)
        if rest:
            await send({"type": "http.response.body", "body": rest, "more_body": True})
        return False
    return True


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


@dataclass(frozen=True, slots=True)
class _Call:
    """A call being forwarded: whose recorder, the route it takes, what was prepared to
    send, and the body the host sent."""

    recorder: Recorder
    route: Route
    prepared: Prepared
    body: bytes


class Turn:
    """The conversation's turn for one call (`frs.turns`): taken as its answer ends, freed
    once what the call leaves behind is written. Taking or freeing it never fails a call: a
    store that cannot say leaves the call without it (no batch this time)."""

    def __init__(self, recorder: Recorder, prepared: Prepared) -> None:
        self.recorder = recorder
        self.prepared = prepared
        self.session_id: SessionId | None = None

    async def take(self) -> None:
        try:
            self.session_id = await self.recorder.take_turn(self.prepared)
        except Exception as exc:
            _log_failure("taking the conversation's turn", exc)

    async def end(self) -> None:
        if self.session_id is None:
            return
        try:
            await self.recorder.end_turn(self.prepared, self.session_id)
        except Exception as exc:  # it runs out on its own (`frs.turns.TURN_SECONDS`)
            _log_failure("freeing the conversation's turn", exc)


class Held:
    """What of an answer waits for its request's new messages to be stored, and its end for
    the conversation's turn (`frs.turns`).

    A host may act on an answer before its stream ends (Claude Code runs a tool as soon as
    its block stops), and the frs tools it then calls must find the thread up to that answer.
    The answer still streams at once: while the recording runs (a few milliseconds; the model
    takes longer to answer), only what would let the host act is kept back, from the first
    block's, item's or message's end on, and the last few bytes of what came (the end of a JSON
    answer, or a stop cut between two chunks). Once the recording is done only the answer's
    own end waits (`FINAL`, the last event of a stream, or the tail of a JSON answer): the
    host sends the conversation's next request once it has it, and by then the call holds
    the conversation's turn, so that request waits, on whichever gateway, until what this
    call leaves behind is written."""

    #: Where a host may act: Anthropic's stops, a finished Responses item, a Chat Completions
    #: chunk that ends a choice (a null finish_reason does not match).
    MARKS = (
        b"content_block_stop",
        b"message_stop",
        b"response.output_item.done",
        b'"finish_reason":"',
    )
    #: The end of a stream: Anthropic's last event, the Responses API's, Chat Completions',
    #: each only where a line of the stream starts (an `event:` line, or a `data:` line
    #: without one): the same words in the model's text or a tool's input stand inside a
    #: JSON string, where a raw newline cannot, and must not hold the rest of the answer.
    FINAL = (
        b"event: message_stop",
        b'data: {"type":"message_stop"',
        b"event: response.completed",
        b'data: {"type":"response.completed"',
        b"data: [DONE]",
    )
    TAIL = max(map(len, (*MARKS, *(b"\n" + f for f in FINAL)))) - 1

    def __init__(
        self,
        recorded: anyio.Event | None,
        ending: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.recorded = recorded
        self.ending = ending
        self.kept = b""
        self.stopped = False  # a mark came while recording: what follows waits for it
        self.ended = False  # the answer's end came: what follows waits for the turn
        self.edge = b"\n"  # the last byte let through: a stream starts at a line's start

    def let_through(self, chunk: bytes) -> bytes:
        """The bytes that may go to the host now."""
        if self.recorded is None and self.ending is None:
            return chunk
        pending = self.kept + chunk
        recording = self.recorded is not None and not self.recorded.is_set()
        if self.ended or (recording and self.stopped):
            self.kept = pending
            return b""
        if not recording and self.ending is None:
            self.kept = b""
            return pending
        found = [at for at in map(pending.find, self.MARKS) if at >= 0] if recording else []
        # A mark at a line's start: "\n" + mark in what came with the byte before it.
        lines = self.edge + pending
        found += [at for at in (lines.find(b"\n" + mark) for mark in self.FINAL) if at >= 0]
        if found:
            self.stopped = True
            self.ended = not recording  # from here on only the end is left
            cut = pending.rfind(b"\n", 0, min(found)) + 1  # from the start of its line
        else:
            cut = max(len(pending) - self.TAIL, 0)
        out, self.kept = pending[:cut], pending[cut:]
        self.edge = out[-1:] or self.edge
        return out

    async def rest(self, whole: bool = True) -> bytes:
        """What was held, once the recording is done and, for a `whole` answer, the turn is
        taken (an answer cut short ends no call: the host will ask again)."""
        if self.recorded is not None:
            await self.recorded.wait()
        if whole and self.ending is not None:
            await self.ending()
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


async def _body(receive: Receive) -> bytes | None:
    """The request's whole body; None when the host hung up before sending all of it, or it
    went over the body cap (`server.http.bodies`): such a request is never forwarded."""
    chunks: list[bytes] = []
    while True:
        message: Message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)


async def error_answer(send: Send, status: int, text: str) -> None:
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
