"""A database the viewer tests read: sessions written through the real service and store.

`write_sample` makes the session "Parser work" with a goal, a plan, a checkpoint, a tool call
and its result, a squash nested inside another (SQ.2 holds SQ.1's summary), a restored squash,
an open focus layer, and a second session for search; `write_hostile` makes a session whose
every stored field is text built to break out of HTML.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from frs import Env, NewMessage, PlanStep, ToolCall, focus, plans, recording, sessions, squashes
from frs.model import Limits, SessionId
from storage import SqliteStore, open_database


@dataclass(frozen=True)
class Sample:
    session: SessionId
    other: SessionId


def _said(role: str, content: str, **more: object) -> NewMessage:
    return NewMessage(role=role, content=content, **more)  # type: ignore[arg-type]


async def write_sample(path: Path) -> Sample:
    async with open_database(path) as db:
        env = Env(SqliteStore(db), Limits())
        started = await sessions.start(
            env, "Parser work", goal="Fix the tokenizer", interface="cli", conversation="c-1"
        )
        sid = started.session.id
        await plans.update(env, [PlanStep("read the code", "done"), PlanStep("fix it", "doing")])
        call = ToolCall("call-1", "bash", '{"command": "grep -n tokenize src/"}')
        await recording.record(
            env,
            [
                _said("user", "The tokenizer drops the last token. Find out why."),
                _said("assistant", "Looking at the source first.", tool_calls=(call,)),
                _said(
                    "tool", "src/lex.py:12: def tokenize(text):", tool_call_id="call-1", name="bash"
                ),
                _said("assistant", "The loop stops one short: range(len(t) - 1)."),
                _said("user", "Good. Does anything else use that loop?"),
                _said("assistant", "Only the tokenizer itself; the fix is local."),
            ],
        )
        # SQ.1 squashes positions 2-4 (the call, its result, the finding); SQ.2 then squashes
        # positions 1-2 (the first question and SQ.1's summary): SQ.1 nests inside SQ.2.
        await squashes.compress_range(env, 2, 4, "Found it: range(len(t) - 1) stops one short.")
        await squashes.compress_range(
            env, 1, 2, "Asked about a dropped token; found the off-by-one."
        )
        await plans.update(env, checkpoint="cause found")
        await recording.record(env, [_said("assistant", "Restored later: " + "detail " * 40)])
        await squashes.compress_range(env, 4, 4, "A note, squashed then restored.")
        await squashes.restore(env, "SQ.3")
        await focus.open_layer(env, "write the regression test")
        await recording.record(env, [_said("user", "Write a test for the last token.")])
        await recording.record(env, [_said("user", "".join(f"log line {i}\n" for i in range(300)))])
        other = await sessions.start(env, "Release notes", goal="Draft 0.2 notes")
        await recording.record(
            env, [_said("user", "Mention the zebra-striped tables.")], session_id=other.session.id
        )
    return Sample(sid, other.session.id)


HOSTILE = (
    '<script>window.pwned=1</script><img src=x onerror="window.pwned=2">'
    "\"'><svg onload=alert(1)>&lt;b&gt;</textarea></pre><!-- ` ${x} -->"
    '<img src="http://198.51.100.7/x.png"><link rel=stylesheet href=//example.invalid/a.css>'
)


#: For the one-line fields, which hold at most 200 characters.
HOSTILE_LINE = (
    "<img src=//198.51.100.7/t.png onerror=window.pwned=3><script>window.pwned=4</script>"
)


async def write_hostile(path: Path, text: str = HOSTILE, line: str = HOSTILE_LINE) -> SessionId:
    """A session whose messages, tool name and arguments, summary and conversation hold
    `text`, and whose title, goal, plan, checkpoint and focus goal hold `line`."""
    async with open_database(path) as db:
        env = Env(SqliteStore(db), Limits())
        started = await sessions.start(
            env, line, goal=line, interface="cli", conversation=text[:512]
        )
        await plans.update(env, [PlanStep(line, "todo")], checkpoint=line)
        call = ToolCall("c1", text, '{"' + text.replace('"', "'") + '": 1}')
        await recording.record(
            env,
            [
                _said("user", text),
                _said("assistant", text, tool_calls=(call,)),
                _said("tool", text, tool_call_id="c1", name=text),
                _said("assistant", text),
            ],
        )
        await squashes.compress_range(env, 2, 3, text[:100])
        await focus.open_layer(env, line)
    return started.session.id
