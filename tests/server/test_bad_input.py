"""Bad input gets a tool error that says what was wrong and what to do, and changes nothing.

Every case runs through an in-process MCP client against the same seeded thread, whose view is

    [1] Summary of 3 messages (SQ.2@...)   numbers 1-3 (SQ.2 holds SQ.1, which holds 1-2)
    [2] Assistant: ... [tool_use:bash, ...]  number 4, the call c1
    [3] Tool bash: ...                      number 5, its result
    [4] Assistant: ...                      number 6
    [5] User: Add the lock.                 number 7

at revision 3, with summary numbers 8 and 9. After each refusal the view is byte-identical
(hence the same revision) and the session list is unchanged.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from server import Settings, build_server
from tests.calls import call_text, text_of, user
from tests.conftest import Connect

LIMITS = {"max_summary_chars": 40, "max_message_chars": 200}
SEED: list[dict[str, Any]] = [
    {"role": "user", "content": "We must fix test_sync; it fails one run in five."},
    {"role": "assistant", "content": "I will read the test first."},
    {"role": "user", "content": "CI says: 3 != 4."},
    {
        "role": "assistant",
        "content": "Running it twenty times.",
        "tool_calls": [
            {"id": "c1", "name": "bash", "arguments": {"cmd": "pytest -k test_sync --count 20"}}
        ],
    },
    {"role": "tool", "name": "bash", "tool_call_id": "c1", "content": "4 failed, 16 passed"},
    {"role": "assistant", "content": "The race is in Syncer.flush; a lock is missing."},
    {"role": "user", "content": "Add the lock."},
]


async def seed(client: Client) -> None:
    await call_text(client, "frs_session", action="start", title="Bad input")
    await call_text(client, "frs_record", messages=SEED)
    await call_text(
        client, "frs_compress_range", **{"from": 1, "to": 2}, summary="Task: fix test_sync."
    )
    await call_text(
        client, "frs_compress_range", **{"from": 1, "to": 2}, summary="Fix test_sync; CI: 3 != 4."
    )


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seeded database, built once per module through the tools themselves."""
    path = tmp_path_factory.mktemp("seeded") / "frs.db"

    async def build() -> None:
        async with Client(build_server(Settings(database=str(path), **LIMITS))) as client:
            await seed(client)

    anyio.run(build)
    return path


@pytest.fixture
def seeded(template: Path, db_path: Path) -> None:
    """A copy of the seeded database where `connect` will open it (closed cleanly: no WAL)."""
    for sibling in template.parent.iterdir():
        shutil.copyfile(sibling, db_path.with_name(sibling.name))


async def state(client: Client) -> tuple[str, str]:
    """What must not change: the view, and the session list."""
    shown = await call_text(client, "frs_view_thread")
    listed = await call_text(client, "frs_session", action="list")
    return shown, listed


def revision(view: str) -> int:
    found = re.search(r" · revision (\d+) · ", view.rsplit("\n", 1)[1])
    assert found, view
    return int(found.group(1))


async def assert_refused_unchanged(
    client: Client, tool: str, arguments: dict[str, Any], says: list[str]
) -> str:
    """Call `tool`, expect a tool error containing every fragment of `says`, and no change."""
    before = await state(client)
    result = await client.call_tool(tool, arguments)
    text = text_of(result)
    assert result.is_error, text
    for fragment in says:
        assert fragment in text, f"{fragment!r} not in {text!r}"
    assert "Traceback" not in text
    after = await state(client)
    assert revision(after[0]) == revision(before[0])
    assert after == before
    return text


def case(name: str, tool: str, says: list[str], **arguments: Any) -> Any:
    """One refused call: a readable id, the tool, what its error must say, its arguments."""
    return pytest.param(tool, arguments, says, id=name)


def calling(*calls: Any, content: str = "x") -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def window(start: int, end: int | None = None, **more: Any) -> dict[str, Any]:
    """`from`/`to` arguments (`from` is a Python keyword)."""
    return {"from": start, **({"to": end} if end is not None else {}), **more}


RANGES = [
    case(
        "from after to",
        "frs_compress_range",
        ["from=4 is after to=2", "1..5"],
        **window(4, 2, summary="s"),
    ),
    case("view from after to", "frs_view_thread", ["from=4 is after to=2", "1..5"], **window(4, 2)),
    case(
        "absolute from after to",
        "frs_compress_range",
        ["from=6 is after to=4", "numbers 1..9"],
        **window(6, 4, summary="s", numbering="absolute"),
    ),
    case(
        "position 0",
        "frs_compress_range",
        ["Range 0..2", "positions 1..5"],
        **window(0, 2, summary="s"),
    ),
    case(
        "negative position",
        "frs_compress_range",
        ["Range -1..2", "positions 1..5"],
        **window(-1, 2, summary="s"),
    ),
    case(
        "to past the end",
        "frs_compress_range",
        ["Range 4..6", "positions 1..5"],
        **window(4, 6, summary="s"),
    ),
    case(
        "wholly past the end",
        "frs_compress_range",
        ["Position 6", "positions 1..5"],
        **window(6, 6, summary="s"),
    ),
    case("view position 0", "frs_view_thread", ["Range 0..1", "positions 1..5"], **window(0, 1)),
    case("view negative from", "frs_view_thread", ["Range -3..5", "positions 1..5"], **window(-3)),
    case(
        "view starting past the end",
        "frs_view_thread",
        ["from=7 is past the end: the last position is 5.", "last=N"],
        **window(7, 9),
    ),
    case(
        "numbers past the end",
        "frs_compress_range",
        ["Numbers 10..12", "numbers 1..9"],
        **window(10, 12, summary="s", numbering="absolute"),
    ),
    case(
        "view number 0",
        "frs_view_thread",
        ["Number 0", "numbers 1..9"],
        **window(0, 0, numbering="absolute"),
    ),
    case(
        "count 0",
        "frs_compress_last",
        ["count=0 is outside 1..5", "Pick a count"],
        count=0,
        summary="s",
    ),
    case(
        "count past the thread",
        "frs_compress_last",
        ["count=6 is outside 1..5", "5 entries"],
        count=6,
        summary="s",
    ),
    case(
        "negative count", "frs_compress_last", ["count=-1 is outside 1..5"], count=-1, summary="s"
    ),
    case("view last 0", "frs_view_thread", ["last", "greater than or equal to 1"], last=0),
]

SUMMARIES = [
    case(
        "empty summary",
        "frs_compress_last",
        ["The summary is empty", "decisions"],
        count=1,
        summary="",
    ),
    case(
        "whitespace summary",
        "frs_compress_last",
        ["The summary is empty"],
        count=1,
        summary="  \n\t ",
    ),
    case(
        "blank range summary",
        "frs_compress_range",
        ["The summary is empty"],
        **window(4, 5, summary=" "),
    ),
    case(
        "summary over the limit",
        "frs_compress_last",
        ["41 characters; the limit is 40", "shorter summary"],
        count=1,
        summary="s" * 41,
    ),
    case(
        "surrogate in summary",
        "frs_compress_last",
        ["The summary contains an unpaired surrogate U+D800", "UTF-8"],
        count=1,
        summary="lock\ud800",
    ),
]

NOPE = ["No session 'nope'", "frs_session(action='list')", "omit session_id"]
SESSIONS = [
    case("view unknown session", "frs_view_thread", NOPE, session_id="nope"),
    case("record unknown session", "frs_record", NOPE, messages=[user("lost")], session_id="nope"),
    case(
        "compress_last unknown session",
        "frs_compress_last",
        NOPE,
        count=1,
        summary="s",
        session_id="nope",
    ),
    case(
        "compress_range unknown session",
        "frs_compress_range",
        NOPE,
        **window(1, 1, summary="s", session_id="nope"),
    ),
    case("restore unknown session", "frs_restore", NOPE, alias="SQ.1", session_id="nope"),
    case("get_alias unknown session", "get_alias", NOPE, alias="M.1", session_id="nope"),
    case("plan unknown session", "frs_plan", NOPE, checkpoint="x", session_id="nope"),
    case("use unknown session", "frs_session", NOPE, action="use", session_id="nope"),
    case("info unknown session", "frs_session", NOPE, action="info", session_id="nope"),
    case("malformed session id", "frs_view_thread", ["session_id", "pattern"], session_id="../etc"),
]

ALIASES = [
    case("unknown message alias", "get_alias", ["No alias 'M.99'", "M.1 to M.9"], alias="M.99"),
    case("unknown squash alias", "get_alias", ["No alias 'SQ.7'", "SQ.1..SQ.2"], alias="SQ.7"),
    case("restore unknown squash", "frs_restore", ["No alias 'SQ.7'", "SQ.1..SQ.2"], alias="SQ.7"),
    case(
        "wrong sha8 of a message",
        "get_alias",
        ["@sha8 does not match", "which is M.4@"],
        alias="M.4@00000000",
    ),
    case(
        "wrong sha8 of a squash",
        "get_alias",
        ["@sha8 does not match", "which is SQ.2@"],
        alias="SQ.2@00000000",
    ),
    case(
        "restore with wrong sha8",
        "frs_restore",
        ["@sha8 does not match", "which is SQ.2@"],
        alias="SQ.2@00000000",
    ),
    case("alias M.0", "get_alias", ["is not an alias", "M.17", "SQ.2@0b4f2d11"], alias="M.0"),
    case("alias SQ.two", "get_alias", ["is not an alias", "M.17"], alias="SQ.two"),
    case("lowercase alias", "get_alias", ["is not an alias", "M.17"], alias="m.1"),
    case("short sha8", "get_alias", ["is not an alias", "M.17"], alias="M.1@xyz"),
    case("empty alias", "get_alias", ["is not an alias", "M.17"], alias=""),
    case("restore malformed alias", "frs_restore", ["is not an alias", "SQ.2"], alias="SQ-2"),
    case(
        "restore a message alias",
        "frs_restore",
        ["names a message, not a squash", "SQ.2"],
        alias="M.4",
    ),
    case(
        "offset past the end",
        "get_alias",
        ["past the end", "has 47 characters", "offset from 0"],
        alias="M.6",
        offset=100,
    ),
]

REVISIONS = [
    case(
        "stale compress_last",
        "frs_compress_last",
        [
            "you expected revision 1",
            "the session is at revision 3",
            "squashed positions 1–2 into SQ.1",
            "squashed positions 1–2 into SQ.2",
            "expected_revision=3",
        ],
        count=1,
        summary="s",
        expected_revision=1,
    ),
    case(
        "stale record",
        "frs_record",
        ["you expected revision 2", "at revision 3", "into SQ.2", "expected_revision=3"],
        messages=[user("late")],
        expected_revision=2,
    ),
    case(
        "stale restore",
        "frs_restore",
        ["you expected revision 0", "at revision 3"],
        alias="SQ.2",
        expected_revision=0,
    ),
    case(
        "revision from the future",
        "frs_compress_range",
        ["you expected revision 99", "at revision 3", "View the thread again"],
        **window(4, 5, summary="s", expected_revision=99),
    ),
    case(
        "stale plan",
        "frs_plan",
        ["you expected revision 2", "at revision 3"],
        checkpoint="x",
        expected_revision=2,
    ),
]

PAIRS = [
    case(
        "call without its result",
        "frs_compress_range",
        ["Range 2..2 would separate a tool call from its result", "2..3"],
        **window(2, 2, summary="s"),
    ),
    case(
        "result without its call",
        "frs_compress_range",
        ["Range 3..4 would separate", "smallest range that keeps them together is 2..4"],
        **window(3, 4, summary="s"),
    ),
    case(
        "range ending on the call",
        "frs_compress_range",
        ["Range 1..2 would separate", "is 1..3"],
        **window(1, 2, summary="s"),
    ),
    case(
        "count splitting a pair",
        "frs_compress_last",
        ["count=3 would separate", "smallest count that keeps them together is 4", "2–5"],
        count=3,
        summary="s",
    ),
    case(
        "numbers splitting a pair",
        "frs_compress_range",
        ["Range 5..6 would separate", "is 4..6"],
        **window(5, 6, summary="s", numbering="absolute"),
    ),
]

RESTORES = [
    case(
        "restore a covered squash",
        "frs_restore",
        ["SQ.1 is inside the later squash SQ.2", "Restore SQ.2 first"],
        alias="SQ.1",
    ),
]

ROLES = "system, user, assistant, tool"
MESSAGES = [
    case("unknown role", "frs_record", ["'robot'", ROLES], messages=[{"role": "robot"}]),
    case(
        "unknown role in a batch",
        "frs_record",
        ["messages[1].role is 'Human'", ROLES],
        messages=[user("fine"), {"role": "Human", "content": "x"}],
    ),
    case(
        "view unknown role", "frs_view_thread", ["Unknown role 'robot'", "summary"], roles=["robot"]
    ),
    case(
        "kind summary",
        "frs_record",
        ["kind is 'summary'", "'message' or 'thinking'"],
        messages=[{"role": "assistant", "content": "x", "kind": "summary"}],
    ),
    case(
        "thinking as user",
        "frs_record",
        ["thinking block", "role 'assistant'"],
        messages=[{"role": "user", "content": "x", "kind": "thinking"}],
    ),
    case(
        "tool call without id",
        "frs_record",
        ["messages.0.tool_calls.0.id", "Field required"],
        messages=[calling({"name": "bash", "arguments": {}})],
    ),
    case(
        "tool call without name",
        "frs_record",
        ["messages.0.tool_calls.0.name", "Field required"],
        messages=[calling({"id": "c9"})],
    ),
    case(
        "tool call id not a string",
        "frs_record",
        ["messages.0.tool_calls.0.id", "valid string"],
        messages=[calling({"id": 7, "name": "bash"})],
    ),
    case(
        "tool call arguments a number",
        "frs_record",
        ["tool_calls.0.arguments", "valid string", "valid dictionary"],
        messages=[calling({"id": "c9", "name": "bash", "arguments": 5})],
    ),
    case(
        "tool calls not a list",
        "frs_record",
        ["messages.0.tool_calls", "valid list"],
        messages=[{"role": "assistant", "content": "x", "tool_calls": "bash"}],
    ),
    case(
        "tool call in OpenAI wire shape",
        "frs_record",
        ["messages.0.tool_calls.0.function", "Extra inputs are not permitted"],
        messages=[calling({"id": "c9", "name": "bash", "function": {"name": "bash"}})],
    ),
    case(
        "blank tool call id",
        "frs_record",
        ["messages[1].tool_calls[0].id is empty", "needs an id"],
        messages=[user("fine"), calling({"id": "  ", "name": "bash"})],
    ),
    case(
        "repeated tool call id",
        "frs_record",
        ["tool_calls[1].id 'c9' repeats an id"],
        messages=[calling({"id": "c9", "name": "a"}, {"id": "c9", "name": "b"})],
    ),
    case(
        "tool calls on a user message",
        "frs_record",
        ["has tool_calls but role 'user'", "only assistant messages"],
        messages=[{"role": "user", "content": "x", "tool_calls": [{"id": "c9", "name": "a"}]}],
    ),
    case(
        "tool_call_id on a user message",
        "frs_record",
        ["has tool_call_id but role 'user'", "only tool messages"],
        messages=[{"role": "user", "content": "x", "tool_call_id": "c1"}],
    ),
    case(
        "no messages", "frs_record", ["No messages given", "messages=[{role, content}"], messages=[]
    ),
    case(
        "message over the limit",
        "frs_record",
        ["messages[0] has 201 characters; the limit is 200", "split"],
        messages=[user("m" * 201)],
    ),
    case(
        "last of a batch over the limit",
        "frs_record",
        ["messages[2] has 250 characters; the limit is 200"],
        messages=[user("fine"), user("also fine"), user("m" * 250)],
    ),
    case(
        "tool call arguments over the limit",
        "frs_record",
        ["messages[0] has 210 characters; the limit is 200"],
        messages=[
            calling({"id": "c9", "name": "write", "arguments": "w" * 190}, content="ok" * 10)
        ],
    ),
    case(
        "lone surrogate in content",
        "frs_record",
        ["messages[0].content contains an unpaired surrogate U+D800 at character 1", "UTF-8"],
        messages=[user("a\ud800b")],
    ),
    case(
        "lone low surrogate in a batch",
        "frs_record",
        ["messages[1].content contains an unpaired surrogate U+DC00"],
        messages=[user("fine"), user("\udc00")],
    ),
    case(
        "lone surrogate in a tool name",
        "frs_record",
        ["messages[0].name contains an unpaired surrogate"],
        messages=[{"role": "tool", "name": "b\udfffash", "content": "x"}],
    ),
    case(
        "lone surrogate in tool arguments",
        "frs_record",
        ["tool_calls[0].arguments contains an unpaired surrogate"],
        messages=[calling({"id": "c9", "name": "bash", "arguments": '{"cmd": "\ud834"}'})],
    ),
]

OTHER = [
    case(
        "unknown numbering",
        "frs_view_thread",
        ["numbering is 'relative'", "'position' or 'absolute'"],
        numbering="relative",
    ),
    case(
        "unknown action",
        "frs_session",
        ["action is 'delete'", "start, list, use or info"],
        action="delete",
    ),
    case(
        "use without session",
        "frs_session",
        ["needs session_id", "frs_session(action='list')"],
        action="use",
    ),
    case("empty plan call", "frs_plan", ["Nothing to do", "steps=[{text, status}]"]),
    case(
        "unknown step status",
        "frs_plan",
        ["status", "todo, doing, done"],
        steps=[{"text": "a", "status": "later"}],
    ),
    case("blank step", "frs_plan", ["steps[0].text is empty"], steps=[{"text": "  "}]),
    case("two-line checkpoint", "frs_plan", ["checkpoint must be one line"], checkpoint="a\nb"),
]


class TestRefusedAndUnchanged:
    @pytest.mark.parametrize(
        ("tool", "arguments", "says"),
        [
            *RANGES,
            *SUMMARIES,
            *SESSIONS,
            *ALIASES,
            *REVISIONS,
            *PAIRS,
            *RESTORES,
            *MESSAGES,
            *OTHER,
        ],
    )
    async def test_the_call_is_refused_with_a_clear_error(
        self, connect: Connect, seeded: None, tool: str, arguments: dict[str, Any], says: list[str]
    ) -> None:
        async with connect(**LIMITS) as client:
            text = await assert_refused_unchanged(client, tool, arguments, says)
        assert text.startswith(f"Error executing tool {tool}: ")

    async def test_restoring_twice_is_refused_and_changes_nothing(
        self, connect: Connect, seeded: None
    ) -> None:
        async with connect(**LIMITS) as client:
            await call_text(client, "frs_restore", alias="SQ.2")
            await assert_refused_unchanged(
                client, "frs_restore", {"alias": "SQ.2"}, ["SQ.2 was already restored"]
            )

    async def test_a_summary_that_grows_is_refused_and_changes_nothing(
        self, connect: Connect, seeded: None
    ) -> None:
        async with connect(**LIMITS) as client:
            text = await assert_refused_unchanged(
                client,
                "frs_compress_last",
                {"count": 1, "summary": "The user asks to add the lock now."},
                ["not smaller", "~10 tokens", "~5 tokens"],
            )
        assert text.index("~10 tokens") < text.index("~5 tokens")  # after, then before

    async def test_a_refused_call_on_an_empty_database_creates_no_session(
        self, connect: Connect
    ) -> None:
        async with connect(**LIMITS) as client:
            result = await client.call_tool("frs_compress_last", {"count": 1, "summary": "s"})
            listed = await call_text(client, "frs_session", action="list")
        assert result.is_error
        assert "The thread has no entries yet: record messages first." in text_of(result)
        assert listed.startswith("No sessions yet")


class TestNul:
    """NUL is valid text: it is stored, shown escaped, and given back whole."""

    async def test_nul_is_stored_escaped_in_the_view_and_returned_whole(
        self, connect: Connect, seeded: None
    ) -> None:
        content = "a\x00b\nsecond\x00line"
        async with connect(**LIMITS) as client:
            recorded = await call_text(client, "frs_record", messages=[user(content)])
            view = await call_text(client, "frs_view_thread", last=1)
            page = await call_text(client, "get_alias", alias="M.10")
        assert "at position 6" in recorded
        assert "\x00" not in view
        assert view.split("\n")[1:3] == ["[6] User: a\\u0000b", "    second\\u0000line"]
        assert page.split("\n", 1)[1] == content

    async def test_nul_in_a_tool_name_and_arguments_is_escaped(self, connect: Connect) -> None:
        async with connect(**LIMITS) as client:
            await call_text(
                client,
                "frs_record",
                messages=[
                    calling({"id": "c\x001", "name": "ba\x00sh", "arguments": {"cmd": "l\x00s"}}),
                    {"role": "tool", "name": "ba\x00sh", "tool_call_id": "c\x001", "content": "ok"},
                ],
            )
            view = await call_text(client, "frs_view_thread")
        assert "\x00" not in view
        assert "    [tool_use:ba\\u0000sh, cmd:l\\u0000s]" in view.split("\n")
        assert "[2] Tool ba\\u0000sh: ok" in view.split("\n")
