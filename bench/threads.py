"""Large synthetic threads made of real corpus text, and the fast way to store them.

A thread is a sequence of 5-message agent steps: a user turn, then two assistant tool calls
each answered by its result. The texts cycle through the corpus's own user, assistant, argument
and tool-result texts, so message sizes follow real transcripts. Every step starts at a position
5k+1 and a call is always followed by its result, so any window of whole steps can be squashed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.corpus import Transcript
from frs import Env, NewMessage, SessionId, ToolCall, recording
from frs import sessions as frs_sessions
from storage import SqliteStore, open_database

STEP = 5
RUN_STEPS = 20  # a run (one user request and the work on it) spans 20 steps = 100 messages


@dataclass(frozen=True, slots=True)
class TextPool:
    """Corpus texts by the part they play, cycled to fill a thread of any size."""

    user: tuple[str, ...]
    assistant: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]  # (tool name, arguments)
    results: tuple[str, ...]

    @classmethod
    def from_corpus(cls, corpus: Sequence[Transcript]) -> TextPool:
        user: list[str] = []
        assistant: list[str] = []
        calls: list[tuple[str, str]] = []
        results: list[str] = []
        for transcript in corpus:
            for line in transcript.lines:
                if line.role == "user" and line.content:
                    user.append(line.content)
                elif line.role == "assistant":
                    if line.content:
                        assistant.append(line.content)
                    calls.extend((c.name, c.arguments) for c in line.tool_calls)
                elif line.role == "tool" and line.content:
                    results.append(line.content)
        return cls(tuple(user), tuple(assistant), tuple(calls), tuple(results))

    def step(self, k: int, tag: str = "s") -> list[NewMessage]:
        """Step `k` (0-based): five messages; call ids are unique per `tag` and step."""
        run = f"{tag}-run-{k // RUN_STEPS}"
        out = [NewMessage(role="user", content=self.user[k % len(self.user)], run_id=run)]
        for half in (0, 1):
            i = 2 * k + half
            name, arguments = self.calls[i % len(self.calls)]
            call_id = f"{tag}{k}{'ab'[half]}"
            out.append(
                NewMessage(
                    role="assistant",
                    content=self.assistant[i % len(self.assistant)],
                    tool_calls=(ToolCall(call_id, name, arguments),),
                    run_id=run,
                )
            )
            out.append(
                NewMessage(
                    role="tool",
                    content=self.results[i % len(self.results)],
                    name=name,
                    tool_call_id=call_id,
                    run_id=run,
                )
            )
        return out

    def messages(self, count: int, first_step: int = 0, tag: str = "s") -> list[NewMessage]:
        """`count` messages (a multiple of 5) starting at step `first_step`."""
        if count % STEP:
            raise ValueError(f"count must be a multiple of {STEP}, got {count}")
        return [m for k in range(first_step, first_step + count // STEP) for m in self.step(k, tag)]

    def batches(self, count: int, size: int, tag: str = "s") -> Iterator[list[NewMessage]]:
        for start in range(0, count, size):
            yield self.messages(min(size, count - start), start // STEP, tag)


async def build_database(
    path: Path, pool: TextPool, size: int, sessions: int = 1, batch: int = 1_000
) -> list[SessionId]:
    """Create `sessions` sessions of `size` messages each in a new database file at `path`,
    through the Python API (`frs.recording.record`, `batch` messages per transaction)."""
    ids: list[SessionId] = []
    async with open_database(path) as db:
        env = Env(SqliteStore(db))
        for index in range(sessions):
            session = (await frs_sessions.start(env, title=f"bench {size} #{index}")).session
            for chunk in pool.batches(size, batch, tag=f"s{index}-"):
                await recording.record(env, chunk, session.id)
            ids.append(session.id)
    return ids
