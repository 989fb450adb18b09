"""The bad-input table: each row is one bad input and the exact text its sender sees.

The rows live here once. `test_bad_inputs.py` makes every call and compares the text, and
`docs/bad-inputs.md` is rendered from the same rows (`python -m tests.robust.bad_inputs` rewrites
it; a test fails when it is stale). `{placeholders}` stand for values known only at run time.
"""

from __future__ import annotations

import html
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

DOC = Path(__file__).resolve().parents[2] / "docs" / "bad-inputs.md"
NO_RESPONSE = "(no response)"
_NOT_JSONRPC = (
    '{"code":-32600,"message":"Invalid Request: not a JSON-RPC 2.0 message (an object with '
    'jsonrpc \\"2.0\\", a method, and params as an object if any)."}'
)
PLACEHOLDERS = {
    "{session}": "<session id>",
    "{root}": "<allowed root>",
    "{port}": "<port>",
    "{db}": "<database path>",
    "{supported}": "<newest schema version>",
    "{usage}": "usage: frs-mcp [-h] … (the usage lines)",
}


@dataclass(frozen=True)
class Tool:
    """A tools/call through an MCP client, on a database seeded with `SEED`."""

    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Stdio:
    """Raw lines to a `frs-mcp` stdio subprocess after the handshake; the text is the answer's
    `error` as JSON, or the text of its tool result, or `NO_RESPONSE` (then the next request
    must still be answered)."""

    lines: tuple[bytes, ...]


@dataclass(frozen=True)
class Cli:
    """`frs-mcp args...` with stdin closed; the text is its stderr. `prepare` names a database
    file made first (see `test_bad_inputs.prepare`); its path is `{db}`."""

    args: tuple[str, ...]
    exit: int = 2
    prepare: str | None = None


@dataclass(frozen=True)
class Served:
    """A stdio server whose database file has a problem; the text is what frs_record answers."""

    condition: Literal["read-only file", "full disk"]


@dataclass(frozen=True)
class Http:
    """One request to `frs-mcp --transport both-http --token s3cret`; the text is the status and
    the body. `headers` replace the defaults (a correct Host, token, Accept and Content-Type);
    a value of None drops that header."""

    method: str
    path: str
    headers: dict[str, str | None] = field(default_factory=dict)
    body: bytes = b""
    legacy_session: bool = False  # initialize first and send its Mcp-Session-Id


Probe = Tool | Stdio | Cli | Served | Http


@dataclass(frozen=True)
class Row:
    key: str
    where: str
    given: str  # the bad input, in words, for the table
    sees: str  # exactly what the sender sees (SEES[key])
    probe: Probe
    xfail: str | None = None  # a known bug: the text is what it should be once fixed


# A short thread with a tool call, a squash and a restore; the fuzz suite starts from it too.
SEED_MESSAGES: tuple[dict[str, Any], ...] = (
    {"role": "user", "content": "The test fails one run in five."},
    {
        "role": "assistant",
        "content": "Running it twenty times.",
        "tool_calls": [{"id": "c1", "name": "bash", "arguments": {"cmd": "pytest"}}],
    },
    {"role": "tool", "name": "bash", "tool_call_id": "c1", "content": "4 failed"},
    {"role": "assistant", "content": "The lock in Syncer.flush is missing."},
    {"role": "assistant", "content": "Adding it and running the suite again."},
    {"role": "user", "content": "Good, go on."},
)

SEED: tuple[tuple[str, dict[str, Any]], ...] = (
    ("frs_session", {"action": "start", "title": "bad inputs", "goal": "refuse clearly"}),
    ("frs_record", {"messages": list(SEED_MESSAGES)}),
    ("frs_compress_range", {"from": 4, "to": 5, "summary": "Lock missing; adding it."}),
    ("frs_compress_range", {"from": 1, "to": 1, "summary": "Fails 1 in 5."}),
    ("frs_restore", {"alias": "SQ.2"}),
    ("frs_compress_range", {"from": 4, "to": 5, "summary": "Lock added."}),
    ("frs_plan", {"steps": [{"text": "reproduce", "status": "done"}, {"text": "fix"}]}),
)
"""Thread after the seed: [1] user, [2] assistant calling c1, [3] its result, [4] SQ.3 (which
holds SQ.1); SQ.2 is restored; revision 6."""

INITIALIZE = (
    b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
    b'"capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
)
_RECORD = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"frs_record",'


def _rows() -> tuple[Row, ...]:
    rows: list[Row] = []

    def tool(key: str, given: str, name: str, arguments: dict[str, Any]) -> None:
        rows.append(Row(key, name, given, SEES[key], Tool(name, arguments)))

    def stdio(key: str, given: str, lines: tuple[bytes, ...]) -> None:
        rows.append(Row(key, "stdio", given, SEES[key], Stdio(lines)))

    def cli(key: str, given: str, probe: Cli, xfail: str | None = None) -> None:
        rows.append(Row(key, "CLI", given, SEES[key], probe, xfail))

    def http(key: str, given: str, probe: Http) -> None:
        rows.append(Row(key, "HTTP", given, SEES[key], probe))

    # -- frs_record
    tool("record-no-messages", "no `messages`", "frs_record", {})
    tool("record-messages-not-list", "`messages` is a string", "frs_record", {"messages": "hi"})
    tool("record-empty", "`messages` is empty", "frs_record", {"messages": []})
    tool(
        "record-role",
        "a role that does not exist",
        "frs_record",
        {"messages": [{"role": "robot", "content": "beep"}]},
    )
    tool(
        "record-kind",
        "a kind that does not exist",
        "frs_record",
        {"messages": [{"role": "user", "content": "x", "kind": "dream"}]},
    )
    tool(
        "record-unknown-field",
        "an unknown field in a message",
        "frs_record",
        {"messages": [{"role": "user", "content": "x", "colour": "red"}]},
    )
    tool(
        "record-user-calls",
        "tool calls on a user message",
        "frs_record",
        {"messages": [{"role": "user", "content": "x", "tool_calls": [{"id": "a", "name": "b"}]}]},
    )
    tool(
        "record-thinking-user",
        "a thinking block from the user",
        "frs_record",
        {"messages": [{"role": "user", "content": "hmm", "kind": "thinking"}]},
    )
    tool(
        "record-call-no-id",
        "a tool call with an empty id",
        "frs_record",
        {"messages": [{"role": "assistant", "tool_calls": [{"id": " ", "name": "bash"}]}]},
    )
    tool(
        "record-call-twice",
        "two tool calls with one id",
        "frs_record",
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": "a", "name": "ls"}, {"id": "a", "name": "cat"}],
                }
            ]
        },
    )
    tool(
        "record-answer-from-assistant",
        "`tool_call_id` on an assistant message",
        "frs_record",
        {"messages": [{"role": "assistant", "content": "x", "tool_call_id": "c1"}]},
    )
    tool(
        "record-too-long",
        "content of 200,001 characters",
        "frs_record",
        {"messages": [{"role": "tool", "content": "x" * 200_001}]},
    )
    tool(
        "record-surrogate",
        "a lone surrogate (U+D800) in the content",
        "frs_record",
        {"messages": [{"role": "user", "content": "bad \ud800 text"}]},
    )
    tool(
        "record-batch",
        "5,001 messages in one call",
        "frs_record",
        {"messages": [{"role": "user", "content": "x"}] * 5_001},
    )
    tool(
        "record-batch-huge",
        "232,000 tiny messages (4 MiB), refused on their count before any is validated",
        "frs_record",
        {"messages": [{"role": "user", "content": "x", "colour": "red"}] * 232_000},
    )
    tool(
        "record-many-calls",
        "an assistant message making 1,001 tool calls",
        "frs_record",
        {
            "messages": [
                {
                    "role": "assistant",
                    "tool_calls": [{"id": f"c{i}", "name": "ls"} for i in range(1_001)],
                }
            ]
        },
    )
    tool(
        "plan-many-steps",
        "a plan of 101 steps",
        "frs_plan",
        {"steps": [{"text": "step"}] * 101},
    )
    tool(
        "range-many",
        "101 ranges in one call",
        "frs_compress_range",
        {"ranges": [{"from": 1, "to": 1, "summary": "x"}] * 101},
    )
    tool(
        "record-stale",
        "a stale `expected_revision`",
        "frs_record",
        {"messages": [{"role": "user", "content": "x"}], "expected_revision": 3},
    )
    tool(
        "record-huge-revision",
        "`expected_revision` below -2⁶³",
        "frs_record",
        {"messages": [{"role": "user", "content": "x"}], "expected_revision": -(2**63) - 1},
    )
    tool(
        "record-no-session",
        "a session id that does not exist",
        "frs_record",
        {"messages": [{"role": "user", "content": "x"}], "session_id": "nope"},
    )
    tool(
        "record-bad-session-id",
        "a session id with a path in it",
        "frs_record",
        {"messages": [{"role": "user", "content": "x"}], "session_id": "../etc/passwd"},
    )
    # -- frs_view_thread
    tool("view-last-zero", "`last=0`", "frs_view_thread", {"last": 0})
    tool("view-from-after-to", "`from` after `to`", "frs_view_thread", {"from": 3, "to": 2})
    tool(
        "view-outside",
        "a window starting past the end of the thread",
        "frs_view_thread",
        {"from": 7, "to": 9},
    )
    tool("view-role", "an unknown role filter", "frs_view_thread", {"roles": ["robot"]})
    tool("view-numbering", "an unknown numbering", "frs_view_thread", {"numbering": "relative"})
    tool("view-preview", "`preview_chars` below 200", "frs_view_thread", {"preview_chars": 10})
    # -- squashing
    tool(
        "range-splits-call",
        "a range that separates a tool call from its result",
        "frs_compress_range",
        {"from": 2, "to": 2, "summary": "ran it"},
    )
    tool(
        "range-empty-summary",
        "a blank summary",
        "frs_compress_range",
        {"from": 1, "to": 1, "summary": "   "},
    )
    tool(
        "range-summary-too-long",
        "a summary of 8,001 characters",
        "frs_compress_range",
        {"from": 1, "to": 3, "summary": "s" * 8_001},
    )
    tool(
        "range-summary-not-smaller",
        "a summary longer than what it replaces",
        "frs_compress_range",
        {
            "from": 1,
            "to": 1,
            "summary": "A much longer summary than the one short message it is meant to replace.",
        },
    )
    tool(
        "range-inside-summary",
        "numbers that start inside a summary",
        "frs_compress_range",
        {"from": 5, "to": 6, "numbering": "absolute", "summary": "x"},
    )
    tool(
        "range-outside",
        "positions outside the thread",
        "frs_compress_range",
        {"from": 3, "to": 9, "summary": "x"},
    )
    tool("last-zero", "`count=0`", "frs_compress_last", {"count": 0, "summary": "x"})
    tool(
        "last-splits-call",
        "a count that separates a tool call from its result",
        "frs_compress_last",
        {"count": 2, "summary": "x"},
    )
    # -- aliases and restore
    tool("alias-malformed", "not an alias", "get_alias", {"alias": "message 3"})
    tool("alias-missing", "a message that does not exist", "get_alias", {"alias": "M.99"})
    tool("alias-sha", "a wrong `@sha8`", "get_alias", {"alias": "M.1@00000000"})
    tool("alias-offset", "an offset past the end", "get_alias", {"alias": "M.1", "offset": 10**6})
    tool("alias-no-squash", "a squash that does not exist", "get_alias", {"alias": "SQ.9"})
    tool("restore-message", "a message alias", "frs_restore", {"alias": "M.1"})
    tool("restore-twice", "a squash already restored", "frs_restore", {"alias": "SQ.2"})
    tool("restore-nested", "a squash inside a later one", "frs_restore", {"alias": "SQ.1"})
    # -- plan and sessions
    tool("plan-nothing", "neither steps nor a checkpoint", "frs_plan", {})
    tool(
        "plan-status",
        "a step status that does not exist",
        "frs_plan",
        {"steps": [{"text": "fix", "status": "blocked"}]},
    )
    tool("plan-two-lines", "a step of two lines", "frs_plan", {"steps": [{"text": "fix\nship"}]})
    tool("plan-blank-checkpoint", "a blank checkpoint name", "frs_plan", {"checkpoint": "  "})
    tool("session-action", "an unknown action", "frs_session", {"action": "delete"})
    tool("session-use-no-id", "`use` without a session id", "frs_session", {"action": "use"})
    tool(
        "session-half-key",
        "an interface without a conversation",
        "frs_session",
        {"action": "start", "interface": "telegram"},
    )
    tool(
        "session-long-title",
        "a title of 201 characters",
        "frs_session",
        {"action": "start", "title": "t" * 201},
    )
    # -- file sources, under an allowed root (see test_bad_inputs._source_root)
    source = {"action": "add", "alias": "D.x"}
    tool(
        "source-hardlink",
        "a file in the root with a second name (a hard link to a file outside)",
        "frs_source",
        {**source, "path": "linked.txt"},
    )
    tool(
        "source-outside",
        "a path outside the root, that exists",
        "frs_source",
        {**source, "path": "../outside.txt"},
    )
    tool(
        "source-outside-missing",
        "a path outside the root, that does not exist (the same answer)",
        "frs_source",
        {**source, "path": "../missing.txt"},
    )
    tool(
        "source-symlink-out",
        "a symlink in the root to a file outside (where it points is not said)",
        "frs_source",
        {**source, "path": "out.txt"},
    )
    tool(
        "source-symlink-dangling",
        "a symlink in the root to a missing file outside (the same answer)",
        "frs_source",
        {**source, "path": "dangling.txt"},
    )
    tool("unknown-tool", "a tool that does not exist", "frs_delete_everything", {})
    # -- stdio
    stdio("stdio-not-json", "a line that is not JSON", (b"this is not json",))
    stdio("stdio-not-jsonrpc", "JSON that is not JSON-RPC", (b'{"id": 5, "hello": "world"}',))
    stdio(
        "stdio-jsonrpc-1",
        "a JSON-RPC 1.0 request",
        (b'{"jsonrpc": "1.0", "id": 5, "method": "ping"}',),
    )
    stdio(
        "stdio-unknown-method",
        "an unknown method",
        (b'{"jsonrpc": "2.0", "id": 5, "method": "frs/delete"}',),
    )
    stdio(
        "stdio-call-no-name",
        "tools/call without a name",
        (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {}}',),
    )
    stdio(
        "stdio-arguments-string",
        "tools/call whose arguments are a string",
        (
            b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call",'
            b' "params": {"name": "frs_view_thread", "arguments": "all"}}',
        ),
    )
    stdio(
        "stdio-oversized-message",
        "an 8 MiB line: one message of 8,388,608 characters",
        (
            _RECORD
            + b'"arguments":{"messages":[{"role":"tool","content":"'
            + b"x" * 2**23
            + b'"}]}}}',
        ),
    )
    stdio(
        "stdio-oversized-garbage",
        "a line over the 16 MiB cap (`--max-line-bytes`)",
        (b"x" * (2**24 + 1),),
    )
    stdio(
        "stdio-deep-nesting",
        "tool call arguments nested 100,000 levels deep",
        (
            _RECORD + b'"arguments":{"messages":[{"role":"assistant","tool_calls":[{"id":"a",'
            b'"name":"b","arguments":' + b"[" * 100_000 + b"]" * 100_000 + b"}]}]}}}",
        ),
    )
    stdio(
        "stdio-escaped-surrogate",
        'a lone surrogate as a JSON escape (`"\\ud800"`)',
        (_RECORD + b'"arguments":{"messages":[{"role":"user","content":"a\\ud800b"}]}}}',),
    )
    stdio(
        "stdio-invalid-utf8",
        "bytes that are not UTF-8 in a content string (once replaced silently)",
        (_RECORD + b'"arguments":{"messages":[{"role":"user","content":"caf\xe9 \xff"}]}}}',),
    )
    stdio(
        "stdio-id-fraction",
        "a request whose id is 1.5",
        (b'{"jsonrpc": "2.0", "id": 1.5, "method": "ping"}',),
    )
    stdio(
        "stdio-id-null",
        "a request whose id is null",
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}',),
    )
    stdio(
        "stdio-id-object",
        "a request whose id is an object",
        (b'{"jsonrpc": "2.0", "id": {"n": 5}, "method": "tools/list"}',),
    )
    stdio(
        "stdio-unknown-prompt",
        "prompts/get of a prompt that does not exist",
        (b'{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"nope"}}',),
    )
    stdio(
        "stdio-unknown-resource",
        "resources/read of a session that does not exist",
        (
            b'{"jsonrpc":"2.0","id":5,"method":"resources/read",'
            b'"params":{"uri":"frs://sessions/nope/thread"}}',
        ),
    )
    stdio(
        "stdio-subscribe-no-uri",
        "resources/subscribe without a uri",
        (b'{"jsonrpc":"2.0","id":5,"method":"resources/subscribe","params":{}}',),
    )
    stdio(
        "stdio-listen-in-2025",
        "subscriptions/listen on a 2025-11-25 connection",
        (
            b'{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen",'
            b'"params":{"notifications":{"resourcesListChanged":true}}}',
        ),
    )
    # -- the command line and the database file
    cli("cli-unknown-flag", "an unknown flag", Cli(("--bogus",)))
    cli("cli-transport", "an unknown transport", Cli(("--transport", "carrier-pigeon")))
    cli("cli-port-range", "a port above 65535", Cli(("--port", "70000")))
    cli("cli-port-text", "a port that is not a number", Cli(("--port", "http")))
    cli("cli-preview", "`--preview-chars` below 200", Cli(("--preview-chars", "10")))
    cli("cli-log-level", "an unknown log level", Cli(("--log-level", "LOUD")))
    cli("cli-body-zero", "`--max-body-bytes 0`", Cli(("--max-body-bytes", "0")))
    cli("cli-connections-zero", "`--max-connections 0`", Cli(("--max-connections", "0")))
    cli("cli-header-timeout", "`--header-timeout 0`", Cli(("--header-timeout", "0")))
    cli("cli-body-timeout", "`--body-timeout soon`", Cli(("--body-timeout", "soon")))
    cli(
        "cli-public-no-token",
        "HTTP on 0.0.0.0 without a token",
        Cli(("--transport", "streamable-http", "--host", "0.0.0.0")),
    )
    cli(
        "cli-allowed-host",
        "a malformed `--allowed-host`",
        Cli(("--transport", "sse", "--allowed-host", "a:b:c")),
    )
    cli("cli-db-directory", "`--db` naming a directory", Cli(("--db", "{db}"), prepare="directory"))
    cli(
        "cli-db-not-sqlite",
        "`--db` naming a text file",
        Cli(("--db", "{db}"), prepare="not sqlite"),
    )
    cli(
        "cli-db-postgres-unreachable",
        "`--db` naming a PostgreSQL server nobody listens for (the password is hidden)",
        Cli(("--db", "postgresql://frs:secret@127.0.0.1:1/frs")),
    )
    cli(
        "cli-db-newer",
        "a database from a newer schema version (the file is left byte for byte)",
        Cli(("--db", "{db}"), prepare="newer schema"),
    )
    cli(
        "cli-db-foreign",
        "`--db` naming another application's SQLite file (a GeoPackage), left byte for byte",
        Cli(("--db", "{db}"), prepare="another application's"),
    )
    cli(
        "cli-db-foreign-unstamped",
        "`--db` naming a SQLite file of other tables and no application_id, left byte for byte",
        Cli(("--db", "{db}"), prepare="unstamped other tables"),
    )
    cli(
        "cli-db-read-only-new",
        "a read-only database file that still needs its schema",
        Cli(("--db", "{db}"), prepare="read-only empty"),
    )
    cli(
        "cli-db-unset-variable",
        "`--db` naming a variable the host did not set (hosts run no shell; `$NAME` is expanded)",
        Cli(("--db", "$FRS_NOPE_ZZ/frs.db")),
    )
    cli(
        "cli-db-unknown-user",
        "`--db` under the home folder of a user this system does not have",
        Cli(("--db", "~nosuchuser_zz/frs.db")),
    )
    cli("cli-db-spaces", "`--db` with a space in front", Cli(("--db", " {db}")))
    cli(
        "cli-db-missing-folder",
        "`--db` in a folder that does not exist (a typo must not grow a tree)",
        Cli(("--db", "{db}/frs.db")),
    )
    cli("cli-import-missing", "`import` of a file that does not exist", Cli(("import", "{db}")))
    web = ("web", "--port", "0", "--db", "{db}")
    cli("cli-web-missing", "`web` on a database file that does not exist", Cli(web))
    cli("cli-web-not-sqlite", "`web` on a text file", Cli(web, prepare="not sqlite"))
    cli(
        "cli-web-never-migrated",
        "`web` on an empty file (the viewer never writes, so never migrates)",
        Cli(web, prepare="read-only empty"),
    )
    cli(
        "cli-web-newer",
        "`web` on a database from a newer schema version (left byte for byte)",
        Cli(web, prepare="newer schema"),
    )
    rows.append(
        Row(
            "served-read-only",
            "database",
            "a read-only database file (reads still work)",
            SEES["served-read-only"],
            Served("read-only file"),
        )
    )
    rows.append(
        Row(
            "served-full-disk",
            "database",
            "a full disk (`prlimit --fsize`); writes work again once there is room",
            SEES["served-full-disk"],
            Served("full disk"),
        )
    )
    # -- HTTP
    http(
        "http-no-token",
        "no bearer token",
        Http("POST", "/mcp", {"Authorization": None}, INITIALIZE),
    )
    http(
        "http-wrong-token",
        "a wrong bearer token",
        Http("POST", "/mcp", {"Authorization": "Bearer guess"}, INITIALIZE),
    )
    http(
        "http-basic-auth",
        "Basic instead of Bearer",
        Http("POST", "/mcp", {"Authorization": "Basic czNjcmV0"}, INITIALIZE),
    )
    http(
        "http-foreign-host",
        "a foreign Host",
        Http("POST", "/mcp", {"Host": "evil.example"}, INITIALIZE),
    )
    http(
        "http-host-no-port",
        "Host without the port",
        Http("POST", "/mcp", {"Host": "127.0.0.1"}, INITIALIZE),
    )
    http(
        "http-foreign-origin",
        "a foreign Origin",
        Http("POST", "/mcp", {"Origin": "http://evil.example"}, INITIALIZE),
    )
    http(
        "http-oversized-body",
        "a body over `--max-body-bytes` (4 MiB)",
        Http("POST", "/mcp", {}, b'{"x":"' + b"a" * (4 * 2**20) + b'"}'),
    )
    http(
        "http-protocol-version-legacy",
        "`MCP-Protocol-Version: 1999-01-01` in a 2025-11-25 session",
        Http(
            "POST",
            "/mcp",
            {"MCP-Protocol-Version": "1999-01-01"},
            b'{"jsonrpc":"2.0","id":3,"method":"tools/list"}',
            legacy_session=True,
        ),
    )
    http(
        "http-protocol-version-modern",
        "`MCP-Protocol-Version` disagreeing with a 2026-07-28 request",
        Http(
            "POST",
            "/mcp",
            {"MCP-Protocol-Version": "1999-01-01", "Mcp-Method": "tools/list"},
            b'{"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":'
            b'{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
            b'"io.modelcontextprotocol/clientCapabilities":{}}}}',
        ),
    )
    http("http-not-json", "a body that is not JSON", Http("POST", "/mcp", {}, b"{not json"))
    http(
        "http-no-accept",
        "no Accept header",
        Http("POST", "/mcp", {"Accept": None}, INITIALIZE),
    )
    http(
        "http-content-type",
        "Content-Type text/plain",
        Http("POST", "/mcp", {"Content-Type": "text/plain"}, INITIALIZE),
    )
    http(
        "http-get-no-session",
        "GET /mcp without a session",
        Http("GET", "/mcp", {"Accept": "text/event-stream"}),
    )
    http(
        "http-sse-unknown-session",
        "a POST to the SSE endpoint for an unknown session",
        Http("POST", "/messages/?session_id=" + "0" * 32, {}, INITIALIZE),
    )
    http(
        "http-unknown-mcp-session",
        "an `Mcp-Session-Id` that does not exist, has expired or was evicted, or is another "
        "tenant's",
        Http(
            "POST",
            "/mcp",
            {"Mcp-Session-Id": "0" * 32, "MCP-Protocol-Version": "2025-11-25"},
            b'{"jsonrpc":"2.0","id":5,"method":"ping"}',
        ),
    )
    http("http-health-post", "POST /health", Http("POST", "/health", {}, b"{}"))
    http("http-unknown-path", "an unknown path", Http("GET", "/admin"))
    return tuple(rows)


SEES: dict[str, str] = {
    "record-no-messages": (
        "Error executing tool frs_record: invalid arguments: messages: Field required (got {}). "
        "Fix these and call again; the tool's input schema gives every field's type and range."
    ),
    "record-messages-not-list": (
        "Error executing tool frs_record: invalid arguments: messages: Input should be a valid "
        "list (got 'hi'). Fix these and call again; the tool's input schema gives every field's "
        "type and range."
    ),
    "record-empty": (
        "Error executing tool frs_record: No messages given. Pass messages=[{role, content}, ...]."
    ),
    "record-role": (
        "Error executing tool frs_record: messages[0].role is 'robot'; use one of system, user, "
        "assistant, tool."
    ),
    "record-kind": (
        "Error executing tool frs_record: messages[0].kind is 'dream'; use 'message' or 'thinking'."
    ),
    "record-unknown-field": (
        "Error executing tool frs_record: invalid arguments: messages.0.colour: Extra inputs are "
        "not permitted (got 'red'). Fix these and call again; the tool's input schema gives every "
        "field's type and range."
    ),
    "record-user-calls": (
        "Error executing tool frs_record: messages[0] has tool_calls but role 'user'; only "
        "assistant messages make tool calls."
    ),
    "record-thinking-user": (
        "Error executing tool frs_record: messages[0] is a thinking block; record it with role "
        "'assistant' and no tool_calls."
    ),
    "record-call-no-id": (
        "Error executing tool frs_record: messages[0].tool_calls[0].id is empty; every tool call "
        "needs an id."
    ),
    "record-call-twice": (
        "Error executing tool frs_record: messages[0].tool_calls[1].id 'a' repeats an id of the "
        "same message."
    ),
    "record-answer-from-assistant": (
        "Error executing tool frs_record: messages[0] has tool_call_id but role 'assistant'; only "
        "tool messages answer tool calls."
    ),
    "record-too-long": (
        "Error executing tool frs_record: messages[0] has 200,001 characters; the limit is "
        "200,000. Record a shorter excerpt, or split the output into several messages."
    ),
    "record-surrogate": (
        "Error executing tool frs_record: messages[0].content contains an unpaired surrogate "
        "U+D800 at character 4, which is not valid Unicode text. Send valid UTF-8 (encode binary "
        "data, e.g. as base64)."
    ),
    "record-batch": (
        "Error executing tool frs_record: 5,001 messages in one call; the limit is 5,000. Split "
        "the batch."
    ),
    "record-batch-huge": (
        "Error executing tool frs_record: 232,000 messages in one call; the limit is 5,000. Split "
        "the batch."
    ),
    "record-many-calls": (
        "Error executing tool frs_record: messages[0] makes 1,001 tool calls; the limit is "
        "1,000. Record the calls over several assistant messages."
    ),
    "plan-many-steps": "Error executing tool frs_plan: 101 steps; a plan holds at most 100.",
    "range-many": (
        "Error executing tool frs_compress_range: 101 ranges in one call; the limit is 100."
    ),
    "record-stale": (
        "Error executing tool frs_record: Stale revision: you expected revision 3, the session is "
        "at revision 6 (since then: revision 4: restored SQ.2; revision 5: squashed positions 4–5 "
        "into SQ.3; revision 6: plan set to 2 steps). Nothing was changed. View the thread again "
        "and retry with expected_revision=6."
    ),
    "record-huge-revision": (
        "Error executing tool frs_record: Stale revision: you expected revision "
        "-9223372036854775809, the session is at revision 6 (since then: revision 1: recorded 6 "
        "messages; revision 2: squashed positions 4–5 into SQ.1; revision 3: squashed position "
        "1 into SQ.2; revision 4: restored SQ.2; revision 5: squashed positions 4–5 into SQ.3; "
        "revision 6: plan set to 2 steps). Nothing was changed. View the thread again and retry "
        "with expected_revision=6."
    ),
    "record-no-session": (
        "Error executing tool frs_record: No session 'nope'. Call frs_session(action='list') to "
        "see the sessions, or omit session_id to use the current one."
    ),
    "record-bad-session-id": (
        "Error executing tool frs_record: invalid arguments: session_id: String should match "
        "pattern '^[A-Za-z0-9_-]{1,64}$' (got '../etc/passwd'). Fix these and call again; the "
        "tool's input schema gives every field's type and range."
    ),
    "view-last-zero": (
        "Error executing tool frs_view_thread: invalid arguments: last: Input should be greater "
        "than or equal to 1 (got 0). Fix these and call again; the tool's input schema gives every "
        "field's type and range."
    ),
    "view-from-after-to": (
        "Error executing tool frs_view_thread: from=3 is after to=2; give from <= to (both 1-based "
        "positions, 1..4)."
    ),
    "view-outside": (
        "Error executing tool frs_view_thread: from=7 is past the end: the last position is 4. "
        "View from 1 to 4, or give last=N for the newest entries."
    ),
    "view-role": (
        "Error executing tool frs_view_thread: Unknown role 'robot' in roles; use any of system, "
        "user, assistant, tool, summary."
    ),
    "view-numbering": (
        "Error executing tool frs_view_thread: numbering is 'relative'; use 'position' or "
        "'absolute'."
    ),
    "view-preview": (
        "Error executing tool frs_view_thread: invalid arguments: preview_chars: Input should be "
        "greater than or equal to 200 (got 10). Fix these and call again; the tool's input schema "
        "gives every field's type and range."
    ),
    "range-splits-call": (
        "Error executing tool frs_compress_range: Range 2..2 would separate a tool call from its "
        "result. The smallest range that keeps them together is 2..3; squash that instead."
    ),
    "range-empty-summary": (
        "Error executing tool frs_compress_range: The summary is empty. Write what the squashed "
        "messages established: decisions, numbers, file names and open questions."
    ),
    "range-summary-too-long": (
        "Error executing tool frs_compress_range: The summary has 8,001 characters; the limit is "
        "8,000. Write a shorter summary: keep decisions, numbers, file names and open questions."
    ),
    "range-summary-not-smaller": (
        "Error executing tool frs_compress_range: The summary (~16 tokens) is not smaller than "
        "what it would replace (~9 tokens), so squashing would grow the thread. Write a shorter "
        "summary, or squash a longer range."
    ),
    "range-inside-summary": (
        "Error executing tool frs_compress_range: Number 5 lies inside the summary [4–6]; a range "
        "must hold whole entries. Start at 4 instead, or restore SQ.3 first."
    ),
    "range-outside": (
        "Error executing tool frs_compress_range: Range 3..9 is outside the thread: the thread has "
        "positions 1..4. View the thread and try again."
    ),
    "last-zero": (
        "Error executing tool frs_compress_last: count=0 is outside 1..4: the thread has 4 "
        "entries. Pick a count in that range."
    ),
    "last-splits-call": (
        "Error executing tool frs_compress_last: count=2 would separate a tool call from its "
        "result. The smallest count that keeps them together is 3 (positions 2–4); squash that "
        "instead."
    ),
    "alias-malformed": (
        "Error executing tool get_alias: 'message 3' is not an alias. Aliases look like M.17 (a "
        "message), SQ.2 (the originals of a squash) or PREFIX.name for a source (H.main, S.schema, "
        "D.readme: prefix in capitals, name of letters, digits, _ or -), optionally with @sha8 as "
        "shown in the view, e.g. SQ.2@0b4f2d11."
    ),
    "alias-missing": (
        "Error executing tool get_alias: No alias 'M.99': message numbers in session {session} "
        "run from M.1 to M.9 (6 recorded messages and 3 summaries)."
    ),
    "alias-sha": (
        "Error executing tool get_alias: No alias 'M.1@00000000': its @sha8 does not match the "
        "stored text, which is M.1@cb9890c0. The text you saw may be from another session or "
        "database; use M.1@cb9890c0 or view the thread again."
    ),
    "alias-offset": (
        "Error executing tool get_alias: offset=1,000,000 is past the end: M.1 has 31 characters. "
        "Use an offset from 0 to the size."
    ),
    "alias-no-squash": (
        "Error executing tool get_alias: No alias 'SQ.9': session {session} has squashes "
        "SQ.1..SQ.3."
    ),
    "restore-message": (
        "Error executing tool frs_restore: 'M.1' names a message, not a squash; frs_restore takes "
        "a squash alias like SQ.2 (shown in the view as 'Summary of ... (SQ.2@...)')."
    ),
    "restore-twice": (
        "Error executing tool frs_restore: SQ.2 was already restored; its originals are back in "
        "the thread. View the thread to see the current positions."
    ),
    "restore-nested": (
        "Error executing tool frs_restore: SQ.1 is inside the later squash SQ.3, so its summary is "
        "not in the thread. Restore SQ.3 first, then SQ.1."
    ),
    "plan-nothing": (
        "Error executing tool frs_plan: Nothing to do: pass steps=[{text, status}] to replace the "
        "plan, checkpoint='name' to mark this point of the thread, or both."
    ),
    "plan-status": (
        "Error executing tool frs_plan: invalid arguments: steps.0.status: not one of todo, "
        "doing, done (got 'blocked'). Fix these and call again; the "
        "tool's input schema gives every field's type and range."
    ),
    "plan-two-lines": (
        "Error executing tool frs_plan: steps[0].text must be one line; remove the line breaks."
    ),
    "plan-blank-checkpoint": (
        "Error executing tool frs_plan: checkpoint is empty; give a short line of text."
    ),
    "session-action": (
        "Error executing tool frs_session: action is 'delete'; use start, list, use or info."
    ),
    "session-use-no-id": (
        "Error executing tool frs_session: action='use' needs session_id; see "
        "frs_session(action='list')."
    ),
    "session-half-key": (
        "Error executing tool frs_session: Give interface and conversation together (e.g. "
        "interface='telegram', conversation='12345'), or neither."
    ),
    "session-long-title": (
        "Error executing tool frs_session: title has 201 characters; the limit is 200."
    ),
    "unknown-tool": "Unknown tool: frs_delete_everything",
    "stdio-not-json": (
        '{"code":-32700,"message":"Parse error: not JSON (Expecting value: line 1 column 1 '
        '(char 0))."}'
    ),
    "stdio-not-jsonrpc": _NOT_JSONRPC,
    "stdio-jsonrpc-1": _NOT_JSONRPC,
    "stdio-unknown-method": '{"code":-32601,"message":"Method not found","data":"frs/delete"}',
    "stdio-call-no-name": '{"code":-32602,"message":"Invalid request parameters","data":""}',
    "stdio-arguments-string": '{"code":-32602,"message":"Invalid request parameters","data":""}',
    "stdio-oversized-message": (
        "Error executing tool frs_record: messages[0] has 8,388,608 characters; the limit is "
        "200,000. Record a shorter excerpt, or split the output into several messages."
    ),
    "stdio-oversized-garbage": (
        '{"code":-32600,"message":"Request too large: a line over 16,777,216 bytes. Send '
        'smaller requests (record a long thread in batches)."}'
    ),
    "stdio-deep-nesting": (
        '{"code":-32700,"message":"Parse error: JSON nested too deeply to read."}'
    ),
    "stdio-escaped-surrogate": (
        "Error executing tool frs_record: messages[0].content contains an unpaired surrogate "
        "U+D800 at character 1, which is not valid Unicode text. Send valid UTF-8 (encode "
        "binary data, e.g. as base64)."
    ),
    "stdio-invalid-utf8": (
        '{"code":-32700,"message":"Parse error: the line is not valid UTF-8 (byte 0xe9 at offset '
        '130). Send JSON encoded as UTF-8."}'
    ),
    "stdio-id-fraction": (
        '{"code":-32600,"message":"Invalid Request: the id is 1.5; a request id is a string or an '
        'integer (leave it out for a notification)."}'
    ),
    "stdio-id-null": (
        '{"code":-32600,"message":"Invalid Request: the id is null; a request id is a string or '
        'an integer (leave it out for a notification)."}'
    ),
    "stdio-id-object": (
        '{"code":-32600,"message":"Invalid Request: the id is {\\"n\\": 5}; a request id is '
        'a string or an integer (leave it out for a notification)."}'
    ),
    "stdio-unknown-prompt": (
        '{"code":-32602,"message":"Unknown prompt \'nope\'; this server has frs_distill."}'
    ),
    "stdio-unknown-resource": (
        '{"code":-32602,"message":"No session \'nope\'. Read frs://sessions for the sessions '
        'there are.","data":{"uri":"frs://sessions/nope/thread"}}'
    ),
    "stdio-subscribe-no-uri": '{"code":-32602,"message":"Invalid request parameters","data":""}',
    "stdio-listen-in-2025": (
        '{"code":-32601,"message":"Method not found","data":"subscriptions/listen"}'
    ),
    "cli-unknown-flag": "{usage}\nfrs-mcp: error: unrecognized arguments: --bogus",
    "cli-transport": (
        "{usage}\nfrs-mcp: error: argument --transport: invalid choice: 'carrier-pigeon' (choose "
        "from 'stdio', 'sse', 'streamable-http', 'both-http')"
    ),
    "cli-port-range": "{usage}\nfrs-mcp: error: argument --port: 70000 is not a port (0..65535)",
    "cli-port-text": "{usage}\nfrs-mcp: error: argument --port: 'http' is not a whole number",
    "cli-preview": "{usage}\nfrs-mcp: error: argument --preview-chars: 10 must be at least 200",
    "cli-log-level": (
        "{usage}\nfrs-mcp: error: argument --log-level: invalid choice: 'LOUD' (choose from "
        "'DEBUG', 'INFO', 'WARNING', 'ERROR')"
    ),
    "cli-body-zero": "{usage}\nfrs-mcp: error: argument --max-body-bytes: 0 must be at least 1",
    "cli-connections-zero": (
        "{usage}\nfrs-mcp: error: argument --max-connections: 0 must be at least 1"
    ),
    "cli-header-timeout": (
        "{usage}\nfrs-mcp: error: argument --header-timeout: 0.0 must be a positive number of "
        "seconds"
    ),
    "cli-body-timeout": (
        "{usage}\nfrs-mcp: error: argument --body-timeout: 'soon' is not a number of seconds"
    ),
    "cli-public-no-token": (
        "frs-mcp: refusing to listen on 0.0.0.0 without a token: anyone who can reach this port "
        "could read and change every session. Set a token with FRS_TOKEN=<secret> (or --token "
        "<secret>, or one per tenant with --tokens FILE), e.g. export FRS_TOKEN=$(python3 -c "
        "'import secrets; print(secrets.token_urlsafe(32))'); clients then send 'Authorization: "
        "Bearer <secret>'. Or bind to 127.0.0.1 (the default)."
    ),
    "cli-allowed-host": "frs-mcp: --allowed-host 'a:b:c' is not a host name, host:port or host:*",
    "cli-db-directory": "frs-mcp: --db is the folder {db}; name a file in it, e.g. {db}/frs.db.",
    "cli-db-not-sqlite": "frs-mcp: cannot open the database {db}: file is not a database",
    "cli-db-postgres-unreachable": (
        "frs-mcp: cannot open the database postgresql://frs:***@127.0.0.1:1/frs: cannot reach the "
        "PostgreSQL server ([Errno 111] Connect call failed ('127.0.0.1', 1)). Check that it runs "
        "and that the connection string (host, port, user, password, database) is right."
    ),
    "cli-db-newer": (
        "frs-mcp: The database has schema version 999, but this frs-mcp knows versions up to "
        "{supported}. Nothing was changed. Upgrade frs-mcp, or use another --db file."
    ),
    "source-hardlink": (
        "Error executing tool frs_source: linked.txt has 2 hard links; a file with more than one "
        "name is not read, since another name may lie outside the allowed roots. Copy the file, "
        "or register its text inline."
    ),
    "source-outside": (
        "Error executing tool frs_source: ../outside.txt is outside every allowed root, or a "
        "symlink leads out of them. Allowed roots: {root}. Register the text inline instead, or "
        "ask the operator to allow the folder with --allow-root."
    ),
    "source-outside-missing": (
        "Error executing tool frs_source: ../missing.txt is outside every allowed root, or a "
        "symlink leads out of them. Allowed roots: {root}. Register the text inline instead, or "
        "ask the operator to allow the folder with --allow-root."
    ),
    "source-symlink-out": (
        "Error executing tool frs_source: out.txt is outside every allowed root, or a symlink "
        "leads out of them. Allowed roots: {root}. Register the text inline instead, or ask "
        "the operator to allow the folder with --allow-root."
    ),
    "source-symlink-dangling": (
        "Error executing tool frs_source: dangling.txt is outside every allowed root, or a symlink "
        "leads out of them. Allowed roots: {root}. Register the text inline instead, or ask "
        "the operator to allow the folder with --allow-root."
    ),
    "cli-db-foreign": (
        "frs-mcp: {db} is not an frs-mcp database: its application_id is 0x47504b47, not "
        "frs-mcp's. Nothing was changed. Point --db (or FRS_DB) at a new file name, or leave it "
        "out to use the default database."
    ),
    "cli-db-foreign-unstamped": (
        "frs-mcp: {db} is not an frs-mcp database: it holds other tables (notes). Nothing was "
        "changed. Point --db (or FRS_DB) at a new file name, or leave it out to use the default "
        "database."
    ),
    "cli-db-read-only-new": (
        "frs-mcp: cannot open the database {db}: attempt to write a readonly database"
    ),
    "cli-web-missing": (
        "frs-mcp: no database at {db}: start frs-mcp once to create it, or pass --db with the "
        "file your server uses (default $FRS_DB, else ~/.local/share/frs-mcp/frs.db)."
    ),
    "cli-web-not-sqlite": (
        "frs-mcp: {db} cannot be read as an SQLite database: file is not a database"
    ),
    "cli-web-never-migrated": (
        "frs-mcp: {db} holds no frs-mcp data yet (schema version 0). Start the server on it "
        "once (frs-mcp --db {db}) to create the schema, or pass the --db file your server uses."
    ),
    "cli-web-newer": (
        "frs-mcp: The database has schema version 999, but this frs-mcp knows versions up to "
        "{supported}. Nothing was changed. Upgrade frs-mcp, or use another --db file."
    ),
    "cli-db-unset-variable": (
        "frs-mcp: --db '$FRS_NOPE_ZZ/frs.db' names $FRS_NOPE_ZZ, which is not set in frs-mcp's "
        "environment (hosts start servers without your shell's variables); write the path out, "
        "or set FRS_NOPE_ZZ in the host's env for this server."
    ),
    "cli-db-unknown-user": (
        "frs-mcp: --db '~nosuchuser_zz/frs.db': the home folder of ~nosuchuser_zz is unknown on "
        "this system; write the path out."
    ),
    "cli-db-spaces": (
        "frs-mcp: --db ' {db}' starts or ends with spaces; remove them (a host passes the value "
        "as written, quotes and spaces included)."
    ),
    "cli-db-missing-folder": (
        "frs-mcp: --db: the folder {db} does not exist; create it first (mkdir -p {db}) or fix "
        "the path. frs-mcp creates only the default database's folder."
    ),
    "cli-import-missing": (
        "frs-mcp import: cannot read {db}: [Errno 2] No such file or directory: '{db}'"
    ),
    "served-read-only": (
        "Error executing tool frs_record: The database failed: attempt to write a readonly "
        "database. Nothing was changed. Check that the disk has room and that the database file is "
        "writable, then call again."
    ),
    "served-full-disk": (
        "Error executing tool frs_record: The database failed: disk I/O error. Nothing was "
        "changed. Check that the disk has room and that the database file is writable, then call "
        "again."
    ),
    "http-no-token": (
        "401 Unauthorized: send the header 'Authorization: Bearer <token>' with the token this "
        "server was started with (--token or FRS_TOKEN) or your tenant's (--tokens)."
    ),
    "http-wrong-token": (
        "401 Unauthorized: send the header 'Authorization: Bearer <token>' with the token this "
        "server was started with (--token or FRS_TOKEN) or your tenant's (--tokens)."
    ),
    "http-basic-auth": (
        "401 Unauthorized: send the header 'Authorization: Bearer <token>' with the token this "
        "server was started with (--token or FRS_TOKEN) or your tenant's (--tokens)."
    ),
    "http-foreign-host": (
        "421 Misdirected request: Host 'evil.example' is not a name this server answers to (a "
        "guard against DNS rebinding). Use http://127.0.0.1:{port}, or start frs-mcp with "
        "--allowed-host <the name clients use>."
    ),
    "http-host-no-port": (
        "421 Misdirected request: Host '127.0.0.1' is not a name this server answers to (a guard "
        "against DNS rebinding). Use http://127.0.0.1:{port}, or start frs-mcp with --allowed-host "
        "<the name clients use>."
    ),
    "http-foreign-origin": (
        "403 Forbidden: pages from Origin 'http://evil.example' may not call this server (a guard "
        "against DNS rebinding). To allow them, start frs-mcp with --allowed-host <that page's "
        "host>."
    ),
    "http-oversized-body": (
        "413 Request body too large: the limit is 4194304 bytes (--max-body-bytes). Send long "
        "content in several smaller calls."
    ),
    "http-protocol-version-legacy": (
        '400 {"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"params._meta must be an '
        "object carrying the required 'io.modelcontextprotocol/protocolVersion' and "
        "'io.modelcontextprotocol/clientCapabilities' envelope keys\"}}"
    ),
    "http-protocol-version-modern": (
        '400 {"jsonrpc":"2.0","id":4,"error":{"code":-32020,"message":"mcp-protocol-version header '
        "does not match the request envelope's protocol version\"}}"
    ),
    "http-not-json": (
        '400 {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error: key must be '
        'a string at line 1 column 2"}}'
    ),
    "http-no-accept": (
        '406 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Not Acceptable: Client '
        'must accept both application/json and text/event-stream"}}'
    ),
    "http-content-type": "400 Invalid Content-Type header",
    "http-get-no-session": (
        '400 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Bad Request: Missing '
        'session ID"}}'
    ),
    "http-sse-unknown-session": "404 Could not find session",
    "http-unknown-mcp-session": (
        '404 {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Session not found"}}'
    ),
    "http-health-post": "405 Use GET /health.",
    "http-unknown-path": "404 Not Found",
}

ROWS = _rows()


def _cell(text: str) -> str:
    for placeholder, shown in PLACEHOLDERS.items():
        text = text.replace(placeholder, f"\x00{shown}\x01")
    text = html.escape(text, quote=False).replace("|", "&#124;").replace("\n", "<br>")
    return text.replace("\x00", "<i>").replace("\x01", "</i>")


def render() -> str:
    """docs/bad-inputs.md, from ROWS."""
    lines = [
        "# Bad inputs and what their senders see",
        "",
        "Every row is checked by `tests/robust/test_bad_inputs.py`, which makes the call and "
        "compares the text exactly; this file is generated from the same rows "
        "(`python -m tests.robust.bad_inputs`). Tool errors reach the model as a tool result "
        "with `isError: true`; stdio rows show the JSON-RPC answer (or that there is none);"
        " CLI rows show stderr and the exit status; HTTP rows show the status and the body. "
        "Italic text stands for a value known only at run time.",
        "",
        "| # | where | bad input | what the sender sees |",
        "|---|---|---|---|",
    ]
    for number, row in enumerate(ROWS, start=1):
        sees = row.sees
        if isinstance(row.probe, Cli):
            sees = f"exit {row.probe.exit}; stderr: {sees}"
        given = _cell(row.given)
        if row.xfail:
            given += f" <br>**known bug:** {_cell(row.xfail)}"
        lines.append(f"| {number} | {row.where} | {given} | <code>{_cell(sees)}</code> |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    DOC.parent.mkdir(exist_ok=True)
    DOC.write_text(render(), encoding="utf-8")
    print(f"wrote {DOC} ({len(ROWS)} rows)", file=sys.stderr)
