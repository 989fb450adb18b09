"""Checks: what may be recorded, named and squashed; pure rules, no I/O, no state.

A squash replaces whole live entries by one summary that must be shorter than what it replaces;
it may not separate a tool call from its result (checked in the use case, which looks up the
partners); a stale `expected_revision` refuses any change.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import NoReturn

from frs.errors import (
    InvalidContent,
    InvalidRequest,
    PositionOutOfRange,
    SummaryNotSmaller,
    SummaryTooLarge,
)
from frs.model import ROLES, Limits, Message, NewMessage, Session
from frs.raw import MARK, is_folded_well
from frs.text import check_text, estimate_tokens


def check_summary(summary: str, limits: Limits) -> str:
    """The summary as it will be stored; refuses empty, oversized or invalid text."""
    text = summary.strip()
    if not text:
        raise InvalidRequest(
            "The summary is empty. Write what the squashed messages established: decisions, "
            "numbers, file names and open questions."
        )
    if len(text) > limits.max_summary_chars:
        raise SummaryTooLarge(len(text), limits.max_summary_chars)
    check_text(text, "The summary")
    return text


def check_new_messages(messages: Sequence[NewMessage], limits: Limits) -> None:
    """Refuse the whole batch if any message is invalid, naming its index (0-based)."""
    if not messages:
        raise InvalidRequest("No messages given. Pass messages=[{role, content}, ...].")
    check_batch_size(len(messages), limits)
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        check_message_size(len(message.content), len(message.tool_calls), where, limits)
        _check_shape(message, where, limits)
        _check_calls(message, where, limits)
        if message.tool_call_id is not None and message.role != "tool":
            raise InvalidContent(
                f"{where} has tool_call_id but role {message.role!r}; only tool messages "
                "answer tool calls."
            )
        for label, optional in (
            ("name", message.name),
            ("tool_call_id", message.tool_call_id),
            ("run_id", message.run_id),
            ("interface_message_id", message.interface_message_id),
            ("created_at", message.created_at),
        ):
            if optional is not None:
                check_field(optional, f"{where}.{label}", limits)
        # Only a folded form (frs.raw.folded) holds a NUL: first, then a template.
        if (
            message.raw is not None
            and "\x00" in message.raw
            and not (message.raw.startswith(MARK) and is_folded_well(message.raw))
        ):
            raise InvalidContent(
                f"{where}.raw holds a NUL character, so it is not JSON text; send the "
                "items as JSON (json.dumps escapes NUL as \\u0000)."
            )
        if message.raw is not None and len(message.raw) > 2 * limits.max_message_chars:
            raise InvalidContent(
                f"{where}.raw has {len(message.raw):,} characters; a runtime's own item may have "
                f"at most {2 * limits.max_message_chars:,} (twice the message limit). Record "
                "the item without its raw copy, or raise --max-message-chars."
            )
        if message.created_at is not None:
            try:
                datetime.fromisoformat(message.created_at)
            except ValueError:
                raise InvalidContent(
                    f"{where}.created_at is {message.created_at[:40]!r}, not an ISO-8601 time; "
                    "send e.g. 2025-01-02T10:00:00Z, or leave it out for now."
                ) from None


def check_batch_size(count: int, limits: Limits) -> None:
    """At most `max_batch` messages a call; checked on the count alone, so an edge can refuse
    an oversized batch before it reads a single message."""
    if count > limits.max_batch:
        raise InvalidRequest(
            f"{count:,} messages in one call; the limit is {limits.max_batch:,}. Split the batch."
        )


def check_message_size(chars: int, calls: int, where: str, limits: Limits) -> None:
    """A message's content of `chars` characters and its `calls` tool calls within the limits;
    on sizes alone, like `check_batch_size` (the arguments' size is added by `_check_shape`)."""
    if chars > limits.max_message_chars:
        _too_long(chars, where, limits)
    if calls > limits.max_calls:
        raise InvalidContent(
            f"{where} makes {calls:,} tool calls; the limit is {limits.max_calls:,}. Record the "
            "calls over several assistant messages."
        )


def check_plan_size(count: int, limits: Limits) -> None:
    if count > limits.max_plan_steps:
        raise InvalidRequest(f"{count} steps; a plan holds at most {limits.max_plan_steps}.")


def check_ranges_size(count: int, limits: Limits) -> None:
    if count > limits.max_plan_steps:
        raise InvalidRequest(f"{count} ranges in one call; the limit is {limits.max_plan_steps}.")


def _too_long(size: int, where: str, limits: Limits) -> NoReturn:
    raise InvalidContent(
        f"{where} has {size:,} characters; the limit is {limits.max_message_chars:,}. "
        "Record a shorter excerpt, or split the output into several messages."
    )


def _check_shape(message: NewMessage, where: str, limits: Limits) -> None:
    """Role, size and content, and which roles may make calls and think."""
    if message.role not in ROLES:
        raise InvalidContent(f"{where}.role is {message.role!r}; use one of {', '.join(ROLES)}.")
    size = len(message.content) + sum(len(c.arguments) for c in message.tool_calls)
    if size > limits.max_message_chars:
        _too_long(size, where, limits)
    check_text(message.content, f"{where}.content")
    if message.tool_calls and message.role != "assistant":
        raise InvalidContent(
            f"{where} has tool_calls but role {message.role!r}; only assistant messages "
            "make tool calls."
        )
    if message.kind == "thinking" and (message.tool_calls or message.role != "assistant"):
        raise InvalidContent(
            f"{where} is a thinking block; record it with role 'assistant' and no tool_calls."
        )


def _check_calls(message: NewMessage, where: str, limits: Limits) -> None:
    """Every call has an id and a name, valid arguments, and an id of its own in the message."""
    seen: set[str] = set()
    for call_index, call in enumerate(message.tool_calls):
        at = f"{where}.tool_calls[{call_index}]"
        for field, value in (("id", call.id), ("name", call.name)):
            if not value.strip():
                raise InvalidContent(f"{at}.{field} is empty; every tool call needs an {field}.")
            check_field(value, f"{at}.{field}", limits)
        check_text(call.arguments, f"{at}.arguments")
        if call.id in seen:
            raise InvalidContent(f"{at}.id {call.id!r} repeats an id of the same message.")
        seen.add(call.id)


def check_field(
    value: str,
    what: str,
    limits: Limits,
    hint: str = "Names and ids are short labels; put long text in content.",
) -> None:
    """A short field (a name, an id, a time, a goal): valid text of bounded size."""
    if len(value) > limits.max_field_chars:
        raise InvalidContent(
            f"{what} has {len(value):,} characters; the limit is {limits.max_field_chars}. {hint}"
        )
    check_text(value, what)


def squash_tokens(
    window: Sequence[Message], summary: str, fix: str, allowance: int = 0
) -> tuple[int, int]:
    """Tokens before and after replacing `window` by `summary`; refuses a squash that grows,
    unless the summary is within `allowance` tokens. `fix` is the next step the refusal names
    (`{allowance}` in it is filled in)."""
    before = sum(entry.tokens for entry in window)
    after = estimate_tokens(summary)
    if after >= before and after > allowance:
        raise SummaryNotSmaller(before, after, fix.format(allowance=allowance))
    return before, after


def check_positions(session: Session, start: int, end: int) -> None:
    """Positions start..end (1-based, inclusive) must lie in the thread."""
    live = session.live_count
    if start > end:
        raise InvalidRequest(
            f"from={start} is after to={end}; give from <= to (both 1-based positions, 1..{live})."
        )
    if not (start >= 1 and end <= live):
        raise PositionOutOfRange(start, end, 1, live)


def check_numbers(session: Session, start: int, end: int) -> None:
    """Permanent numbers start..end must have been given out."""
    top = session.next_number - 1
    if start > end:
        raise InvalidRequest(
            f"from={start} is after to={end}; give from <= to (message numbers 1..{top})."
        )
    if not (start >= 1 and end <= top):
        raise PositionOutOfRange(start, end, 1, top, unit="numbers")


def check_line(text: str | None, what: str, limits: Limits, required: bool = False) -> str:
    """A one-line text (a title, a plan step, a goal, a checkpoint's name), stripped; refuses
    an empty one when `required`, a line break, or more than the title limit."""
    value = (text or "").strip()
    if required and not value:
        raise InvalidRequest(f"{what} is empty; give a short line of text.")
    if "\n" in value or "\r" in value:
        raise InvalidRequest(f"{what} must be one line; remove the line breaks.")
    if len(value) > limits.max_title_chars:
        raise InvalidRequest(
            f"{what} has {len(value)} characters; the limit is {limits.max_title_chars}."
        )
    check_text(value, what)
    return value
