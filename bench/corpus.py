"""The third-party transcript corpus (tests/data/corpus), read as the benchmark needs it.

Each JSONL line is one message in the corpus's common format (see its README). A transcript can
be handed to `frs.recording.record` as `NewMessage`s, to `frs_record` as JSON objects, or
rendered as the OpenAI chat-format request a host would send to a model.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from frs import Message, NewMessage, ToolCall
from frs.text import estimate_tokens, message_body, sha256_hex

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO / "tests" / "data" / "corpus"  # the tests' corpus; its README gives the licences


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    arguments: str


class _Call(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def arguments(self) -> str: ...


class _Recordable(Protocol):
    """A corpus `Line` or a `NewMessage`: what `tool_arg` reads."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def tool_calls(self) -> Sequence[_Call]: ...
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def name(self) -> str | None: ...
    @property
    def run_id(self) -> str | None: ...


def tool_arg(message: _Recordable) -> dict[str, Any]:
    """A message as one item of `frs_record(messages=[...])`."""
    item: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        item["tool_calls"] = [
            {"id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
    if message.tool_call_id is not None:
        item["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        item["name"] = message.name
    if message.run_id is not None:
        item["run_id"] = message.run_id
    return item


@dataclass(frozen=True, slots=True)
class Line:
    """One corpus message."""

    role: str
    content: str
    tool_calls: tuple[Call, ...]
    tool_call_id: str | None
    run_id: str | None
    created_at: str | None
    name: str | None

    def to_new(self) -> NewMessage:
        return NewMessage(
            role=self.role,  # type: ignore[arg-type]  # the corpus uses the four roles only
            content=self.content,
            name=self.name,
            tool_calls=tuple(ToolCall(c.id, c.name, c.arguments) for c in self.tool_calls),
            tool_call_id=self.tool_call_id,
            run_id=self.run_id,
            created_at=self.created_at,
        )

    def to_chat(self) -> dict[str, Any]:
        """The message as the OpenAI Chat Completions API takes it."""
        item: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            item["content"] = self.content or None
            item["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in self.tool_calls
            ]
        if self.tool_call_id is not None:
            item["tool_call_id"] = self.tool_call_id
        return item


@dataclass(frozen=True, slots=True)
class Transcript:
    name: str
    lines: tuple[Line, ...]

    def thread(self) -> list[Message]:
        """The transcript as a thread's entries, as a store would hand them back: numbered from
        1 in order, each result paired with the latest earlier call of its id (`answers`)."""
        entries = []
        made: dict[str, int] = {}
        for number, line in enumerate(self.lines, start=1):
            new = line.to_new()
            body = message_body(new.content, new.tool_calls)
            answers = made.get(new.tool_call_id) if new.tool_call_id is not None else None
            made.update((call.id, number) for call in new.tool_calls)
            entries.append(
                Message(
                    number=number,
                    ord=number,
                    ord_last=number,
                    role=new.role,
                    kind="message",
                    content=new.content,
                    sha256=sha256_hex(body),
                    tokens=estimate_tokens(body),
                    live=True,
                    created_at=new.created_at,
                    name=new.name,
                    tool_calls=new.tool_calls,
                    tool_call_id=new.tool_call_id,
                    answers=answers,
                    run_id=new.run_id,
                )
            )
        return entries

    def chat_request(self) -> str:
        """The JSON body of a chat-completions request carrying every message, compact."""
        body = {"model": "gpt-4o", "messages": [line.to_chat() for line in self.lines]}
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def corpus_dir() -> Path:
    """The corpus folder inside the repository."""
    return CORPUS


def _line(raw: dict[str, Any]) -> Line:
    calls = tuple(
        Call(str(c["id"]), str(c["name"]), str(c.get("arguments") or ""))
        for c in raw.get("tool_calls") or ()
    )
    return Line(
        role=str(raw["role"]),
        content=str(raw.get("content") or ""),
        tool_calls=calls,
        tool_call_id=raw.get("tool_call_id"),
        run_id=raw.get("run_id"),
        created_at=raw.get("created_at"),
        name=raw.get("name"),
    )


def load_transcript(path: Path) -> Transcript:
    with path.open(encoding="utf-8") as handle:
        lines = tuple(_line(json.loads(text)) for text in handle if text.strip())
    return Transcript(path.stem, lines)


def load_corpus(folder: Path | None = None) -> list[Transcript]:
    """Every `*.jsonl` transcript of the corpus, in file-name order."""
    where = folder or corpus_dir()
    files = sorted(where.glob("*.jsonl"))
    if not files:
        raise FileNotFoundError(
            f"no *.jsonl transcripts in {where}: the repository's test data is missing"
        )
    return [load_transcript(path) for path in files]
