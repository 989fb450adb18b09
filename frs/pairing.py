"""Pairing tool results with the calls they answer, as a batch is recorded.

A result answers the latest call made with its id before it: earlier in the batch, else in the
session. Pairing never refuses a batch. What cannot pair cleanly (a result for an id no call
made, a second result for one call, a call id made again) is recorded as given and named in a
warning: the message's index in the batch, the id, and what an export does with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from frs.export import export_call_id
from frs.model import CallRecord, NewMessage, ToolCall


def call_ids(messages: Iterable[NewMessage]) -> list[str]:
    """Every call id a batch mentions, by a call or a result, once each, in order."""
    ids: dict[str, None] = {}
    for message in messages:
        if message.tool_call_id is not None:
            ids[message.tool_call_id] = None
        ids.update((call.id, None) for call in message.tool_calls)
    return list(ids)


@dataclass(slots=True)
class Pairing:
    """Walks one batch in order; `known` is what the session held before it, by call id."""

    known: Mapping[str, CallRecord]
    warnings: list[str] = field(default_factory=list)
    # id -> (number, where) of the latest call made with it in this batch
    _made: dict[str, tuple[int, str]] = field(default_factory=dict)
    # (call number, id) -> where the result that answered it in this batch is
    _answered: dict[tuple[int, str], str] = field(default_factory=dict)

    def add(self, index: int, message: NewMessage, number: int) -> int | None:
        """Note messages[index], numbered `number`; the number of the call it answers (None
        for no call). Results pair before calls are noted: a message answers earlier calls."""
        answers = None
        if message.tool_call_id is not None:
            answers = self._answer(index, message.tool_call_id)
        self._make(index, message.tool_calls, number)
        return answers

    def _answer(self, index: int, call_id: str) -> int | None:
        at = f"messages[{index}]"
        made = self._made.get(call_id)
        known = self.known.get(call_id)
        if made is not None:
            call, by = made[0], self._answered.get((made[0], call_id))
        elif known is not None:
            call = known.number
            by = _alias(known.answered_by) or self._answered.get((call, call_id))
        else:
            self.warnings.append(
                f"Warning: {at} answers call id {call_id!r}, which no recorded call made; "
                "exports send it as plain text."
            )
            return None
        if by is not None:
            self.warnings.append(
                f"Warning: {at} answers call id {call_id!r} of M.{call}, which {by} already "
                "answered; exports send it as plain text."
            )
        else:
            self._answered[(call, call_id)] = at
        return call

    def _make(self, index: int, calls: Sequence[ToolCall], number: int) -> None:
        at = f"messages[{index}]"
        for call in calls:
            made = self._made.get(call.id)
            known = self.known.get(call.id)
            before = made[1] if made is not None else _alias(known.number if known else None)
            if before is not None:
                first = export_call_id(call.id, set())
                self.warnings.append(
                    f"Warning: {at} reuses call id {call.id!r}, made before by {before}; results "
                    "with this id now answer this call, and an export that sends both calls "
                    f"renames this one {export_call_id(call.id, {first})!r}."
                )
            self._made[call.id] = (number, at)


def _alias(number: int | None) -> str | None:
    return None if number is None else f"M.{number}"
