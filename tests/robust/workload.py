"""A client that records, squashes and restores in a loop over a raw stdio wire.

It keeps what the server confirmed in an `Acknowledged`, and only after the response line has
been read: a write whose response never arrived (the server was killed) may or may not be in the
file, but a confirmed one must be. Refusals are fine (a squash that would split a tool call, a
restore of a squash already undone); a refusal that is not a readable tool error is not.
"""

from __future__ import annotations

import random
import re
import string
from dataclasses import dataclass, field
from typing import Any

from tests.robust.audit import Acknowledged
from tests.robust.wire import ServerGone, Wire, text_of

_SESSION = re.compile(r"^(?:Started|Resumed) session (\w+) ")
_ENTRIES = re.compile(r" · ([\d,]+) entr(?:y|ies) for ")
_NOW_HAS = re.compile(r"The thread now has ([\d,]+) entr(?:y|ies)")
_SQUASH = re.compile(r"^SQ\.(\d+)@")
#: Problems that must never reach a client as they are.
FORBIDDEN = ("database is locked", "disk I/O error", "Traceback", "OperationalError")


def check_refusal(tool: str, result: dict[str, Any]) -> str:
    """A refused call must be a tool error with a message, never a bare or raw failure."""
    text = text_of(result)
    prefix = f"Error executing tool {tool}: "
    assert text.startswith(prefix), f"not a tool error: {text!r}"
    assert len(text) > len(prefix), f"un-translated failure: {text!r}"
    for bad in FORBIDDEN:
        assert bad not in text, f"{tool} leaked {bad!r}: {text!r}"
    return text


@dataclass
class Tally:
    calls: int = 0
    refused: int = 0
    refusals: list[str] = field(default_factory=list)


@dataclass
class Worker:
    """One stream of calls into its own session (get-or-create by interface and conversation)."""

    conversation: str
    rng: random.Random
    interface: str = "robust"
    squash: bool = True  # also squash and restore, not only record
    guard: bool = False  # squash with expected_revision = the last revision this worker saw
    session_id: str | None = None
    acked: Acknowledged = field(default_factory=Acknowledged)
    revisions: list[int] = field(default_factory=list)  # as confirmed, in order
    tally: Tally = field(default_factory=Tally)
    _live: int = 0
    _sequence: int = 0
    _squashes: list[int] = field(default_factory=list)

    async def run(self, wire: Wire, calls: int | None = None) -> None:
        """Call until `calls` are made, or until the server is gone (then return quietly)."""
        try:
            await self._attach(wire)
            made = 0
            while calls is None or made < calls:
                await self.step(wire)
                made += 1
        except ServerGone:
            return

    async def _call(self, wire: Wire, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.tally.calls += 1
        result = await wire.call_tool(tool, arguments)
        if result.get("isError"):
            self.tally.refused += 1
            self.tally.refusals.append(check_refusal(tool, result))
        return result

    async def _attach(self, wire: Wire) -> None:
        result = await self._call(
            wire,
            "frs_session",
            {
                "action": "start",
                "title": f"robust {self.conversation}",
                "interface": self.interface,
                "conversation": self.conversation,
            },
        )
        found = _SESSION.match(text_of(result))
        assert found, text_of(result)
        if self.session_id is not None:
            assert found.group(1) == self.session_id, "get-or-create gave another session"
        self.session_id = found.group(1)
        info = await self._call(
            wire, "frs_session", {"action": "info", "session_id": self.session_id}
        )
        entries = _ENTRIES.search(text_of(info))
        assert entries, text_of(info)
        self._live = int(entries.group(1).replace(",", ""))

    async def step(self, wire: Wire) -> None:
        roll = self.rng.random()
        if not self.squash or roll < 0.6 or self._live < 2:
            await self.record(wire)
        elif roll < 0.72:
            await self.compress_last(wire)
        elif roll < 0.84:
            await self.compress_range(wire)
        elif roll < 0.94:
            await self.restore(wire)
        else:
            await self.view(wire)

    def _text(self, size: int) -> str:
        self._sequence += 1
        filler = "".join(self.rng.choices(string.ascii_letters + " ", k=size))
        return f"{self.conversation}#{self._sequence} {filler}".strip()

    def _confirm(self, result: dict[str, Any], change: str) -> int:
        assert self.session_id is not None
        revision = int(result["structuredContent"]["revision"])
        if self.revisions:
            assert revision > self.revisions[-1], f"revision went {self.revisions[-1]}→{revision}"
        self.revisions.append(revision)
        self.acked.changes[(self.session_id, revision)] = change
        return revision

    async def record(self, wire: Wire) -> None:
        batch: list[dict[str, Any]] = []
        shape = self.rng.random()
        if shape < 0.25:
            call = f"call-{self.conversation}-{self._sequence}"
            batch.append(
                {
                    "role": "assistant",
                    "content": self._text(self.rng.randint(20, 120)),
                    "tool_calls": [{"id": call, "name": "bash", "arguments": {"cmd": "make"}}],
                }
            )
            if self.rng.random() < 0.7:  # else the result comes later, or never (a kill)
                batch.append(
                    {
                        "role": "tool",
                        "name": "bash",
                        "tool_call_id": call,
                        "content": self._text(self.rng.randint(20, 300)),
                    }
                )
        else:
            for _ in range(self.rng.randint(1, 3)):
                role = self.rng.choice(("user", "assistant"))
                batch.append({"role": role, "content": self._text(self.rng.randint(20, 200))})
        result = await self._call(
            wire, "frs_record", {"messages": batch, "session_id": self.session_id}
        )
        assert not result.get("isError"), text_of(result)
        data = result["structuredContent"]
        assert self.session_id is not None
        assert data["session_id"] == self.session_id
        self._confirm(result, "recorded")
        for number, message in zip(data["numbers"], batch, strict=True):
            self.acked.messages[(self.session_id, number)] = message["content"]
        self._live = data["positions"][-1]

    async def _squashed(self, result: dict[str, Any], summary: str) -> None:
        if result.get("isError"):
            return
        assert self.session_id is not None
        self._confirm(result, "squashed")
        found = _SQUASH.match(result["structuredContent"]["alias"])
        assert found, result["structuredContent"]
        n = int(found.group(1))
        self.acked.squashes[(self.session_id, n)] = summary
        self._squashes.append(n)
        now = _NOW_HAS.search(text_of(result))
        assert now, text_of(result)
        self._live = int(now.group(1).replace(",", ""))

    def _guard(self) -> dict[str, int]:
        return {"expected_revision": self.revisions[-1]} if self.guard and self.revisions else {}

    async def compress_last(self, wire: Wire) -> None:
        summary = f"s{self._sequence}"
        self._sequence += 1
        count = self.rng.randint(2, min(4, self._live))
        result = await self._call(
            wire,
            "frs_compress_last",
            {"count": count, "summary": summary, "session_id": self.session_id, **self._guard()},
        )
        await self._squashed(result, summary)

    async def compress_range(self, wire: Wire) -> None:
        summary = f"r{self._sequence}"
        self._sequence += 1
        start = self.rng.randint(1, self._live - 1)
        end = self.rng.randint(start + 1, min(self._live, start + 4))
        result = await self._call(
            wire,
            "frs_compress_range",
            {
                "from": start,
                "to": end,
                "summary": summary,
                "session_id": self.session_id,
                **self._guard(),
            },
        )
        await self._squashed(result, summary)

    async def restore(self, wire: Wire) -> None:
        if not self._squashes:
            return await self.view(wire)
        n = self.rng.choice(self._squashes)
        result = await self._call(
            wire, "frs_restore", {"alias": f"SQ.{n}", "session_id": self.session_id}
        )
        if result.get("isError"):
            return None
        assert self.session_id is not None
        self._confirm(result, "restored")
        self.acked.restores.add((self.session_id, n))
        self._squashes.remove(n)
        data = result["structuredContent"]
        self._live += data["last"] - data["first"]  # the summary's place now holds them all
        return None

    async def view(self, wire: Wire) -> None:
        result = await self._call(
            wire, "frs_view_thread", {"last": 5, "session_id": self.session_id}
        )
        assert not result.get("isError"), text_of(result)
