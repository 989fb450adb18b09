"""Squashing and restoring: a stretch of entries becomes one summary, and back.

A squash writes the summary as a new entry spanning the ords of what it replaced, marks the
originals not live, and keeps them, rendered as they were, one `get_alias("SQ.n")` away. A
restore puts them back in the summary's place. Every call is one revision, however many
ranges it squashes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from frs.aliases import parse_alias, sha_matches, sha_mismatch
from frs.checks import check_ranges_size, check_summary, squash_tokens
from frs.env import Env
from frs.errors import AliasNotFound, AlreadyRestored, CoveredByLaterSquash, InvalidRequest
from frs.model import Message, Numbering, Session, SessionId, Squash
from frs.mutation import Mutation, mutation
from frs.originals import part_starts, render_parts
from frs.ports import ThreadReader
from frs.ranges import AskedRange, Range, check_apart, check_pairs, plan_range, span_name
from frs.text import sha256_hex

RANGE_FIX = "Write a shorter summary, or squash a longer range."
LAST_FIX = "Write a shorter summary, or squash a larger count."
LAYER_FIX = (
    "Write a shorter summary: closing a layer takes any summary of up to {allowance} tokens."
)


#: When a squash of a thread a gateway sends reaches the model: at its next call ("next"); once
#: the open tool call it covers is answered ("open": the newest entries are the call the model
#: is waiting on); never ("gone": the host compacted its history and no longer sends them).
Reach = Literal["next", "open", "gone"]


@dataclass(frozen=True, slots=True)
class Squashed:
    session_id: SessionId
    squash: Squash
    position: int  # where the summary now sits
    replaced: str  # "positions 3–5" or "numbers 3–5"
    live_count: int
    revision: int
    #: Estimated tokens of the entries after the summary (an upper bound past
    #: `AFTER_READ` entries): what a prompt cache writes again when it is first sent.
    after_tokens: int | None = None
    #: Where the model is sent this thread by a gateway (it records the conversation): when
    #: the squash reaches the model (`Reach`); None where no gateway sends it.
    reach: Reach | None = None


@dataclass(frozen=True, slots=True)
class Restored:
    session_id: SessionId
    squash: Squash
    first: int  # the positions its entries hold again, first to last
    last: int
    revision: int


async def compress_range(
    env: Env,
    start: int,
    end: int,
    summary: str,
    numbering: Numbering | None = None,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> Squashed:
    """Replace the entries at positions (or, absolute, numbers) start..end by a summary."""
    (done,) = await compress_ranges(
        env, [AskedRange(start, end, summary)], numbering, session_id, expected_revision
    )
    return done


async def compress_ranges(
    env: Env,
    ranges: Sequence[AskedRange],
    numbering: Numbering | None = None,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
    automatic: bool = False,
) -> tuple[Squashed, ...]:
    """Squash several ranges, each with its summary, all or none, in one revision.

    Every range names positions (or numbers) of the thread as it is before the call, so
    one view is enough to squash many stretches; ranges may not overlap. Each is checked
    as a single squash would be, then they are applied from the last to the first, so no
    squash moves the positions of one still to come. Returns them in the order given,
    numbered (SQ.n, and the summaries' M.n) in that order too. `automatic`: the gateway's
    autopilot makes them (`frs.autopilot`), not a model.
    """
    texts = [check_summary(asked.summary, env.limits) for asked in ranges]
    if not ranges:
        raise InvalidRequest("ranges is empty; give at least one {from, to, summary}.")
    check_ranges_size(len(ranges), env.limits)
    async with mutation(env, session_id, expected_revision) as m:
        mode = numbering or m.session.numbering
        planned = [await plan_range(m.tx, m.session, r.start, r.end, mode) for r in ranges]
        check_apart(planned, ranges)
        base = (m.session.next_squash, m.session.next_number)
        done: dict[int, Squash] = {}
        for i in sorted(range(len(ranges)), key=lambda i: planned[i].first, reverse=True):
            at = (base[0] + i, base[1] + i)
            done[i] = await squash_window(
                m, planned[i].window, texts[i], RANGE_FIX, at=at, automatic=automatic
            )
        by = "the autopilot squashed " if automatic else "squashed "
        m.change = by + "; ".join(f"{planned[i].named} into SQ.{done[i].n}" for i in sorted(done))
        positions = [_now_at(r, planned) for r in planned]
        after = [await _after_tokens(m, position) for position in positions]
        reach = [await _reach(m, done[i]) for i in range(len(planned))]
    return tuple(
        Squashed(
            m.session.id, done[i], positions[i], r.named, *_counts(m.session), after[i], reach[i]
        )
        for i, r in enumerate(planned)
    )


async def compress_last(
    env: Env,
    count: int,
    summary: str,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> Squashed:
    """Replace the last `count` entries, all inside the innermost open layer, by a summary."""
    text = check_summary(summary, env.limits)
    async with mutation(env, session_id, expected_revision) as m:
        live = m.session.live_count
        if live == 0:
            raise InvalidRequest("The thread has no entries yet: record messages first.")
        if not 1 <= count <= live:
            raise InvalidRequest(
                f"count={count} is outside 1..{live}: the thread has {live} entries. "
                "Pick a count in that range."
            )
        await _check_inside_layer(m, count)
        first = live - count + 1
        window = await m.tx.entries_at(m.session.id, first, count)
        await check_pairs(m.tx, m.session, window, first, "position", as_count=True)
        named = span_name("position", first, live)
        squash = await squash_window(m, window, text, LAST_FIX)
        m.change = f"squashed {named} into SQ.{squash.n}"
        reach = await _reach(m, squash)
    return Squashed(m.session.id, squash, first, named, *_counts(m.session), 0, reach)


async def _check_inside_layer(m: Mutation, count: int) -> None:
    layers = await m.tx.open_layers(m.session.id)
    if not layers:
        return
    inner, live = layers[-1], m.session.live_count
    start = (await m.tx.positions_of(m.session.id, [inner.start_ord]))[0]
    room = live - start + 1
    if count <= room:
        return
    if not room:
        raise InvalidRequest(
            f"count={count}: the open focus layer {inner.goal!r} has no entries yet, and "
            "compress_last never reaches into its parent."
        )
    raise InvalidRequest(
        f"count={count} reaches out of the open focus layer {inner.goal!r}, which holds "
        f"positions {start}–{live} ({room} entries); squash at most count={room}, or close "
        "the layer with frs_focus(action='close', summary=...)."
    )


async def squash_window(
    m: Mutation,
    window: Sequence[Message],
    summary: str,
    fix: str,
    allowance: int = 0,
    at: tuple[int, int] | None = None,
    automatic: bool = False,
) -> Squash:
    """Write one squash of `window` into `summary` and update `m.session`'s counters.

    `fix` is what a refusal for a summary no shorter than its originals suggests; `allowance`
    the tokens a summary may have regardless; `at` the squash's n and its summary's number,
    when not the next ones (several squashes of one call are numbered as given); `automatic`
    marks a squash the gateway's autopilot made (`frs.autopilot`).
    """
    session = m.session
    before, after = squash_tokens(window, summary, fix, allowance)
    n, number = at or (session.next_squash, session.next_number)
    parts = render_parts(window)
    originals = "\n".join(parts)
    squash = Squash(
        n=n,
        summary_number=number,
        first=window[0].ord,
        last=window[-1].ord_last,
        count=len(window),
        covered=sum(entry.covered for entry in window),
        tokens_before=before,
        tokens_after=after,
        sha256=sha256_hex(originals),
        created_at=m.now,
        summary=summary,
        chars=len(originals),
        automatic=automatic,
    )
    summary_entry = _summary_entry(squash, window)
    await m.tx.apply_squash(session.id, squash, summary_entry, window, part_starts(parts))
    lanes = dict(session.lanes)
    for entry in window:
        lanes[entry.lane] -= 1
    lanes["summary"] = lanes.get("summary", 0) + 1
    m.session = replace(
        session,
        next_number=max(session.next_number, number + 1),
        next_squash=max(session.next_squash, n + 1),
        live_count=session.live_count - len(window) + 1,
        live_tokens=session.live_tokens - before + after,
        lanes=lanes,
    )
    return squash


def _summary_entry(squash: Squash, window: Sequence[Message]) -> Message:
    return Message(
        number=squash.summary_number,
        ord=squash.first,
        ord_last=squash.last,
        role="assistant",
        kind="summary",
        content=squash.summary,
        sha256=sha256_hex(squash.summary),
        tokens=squash.tokens_after,
        live=True,
        # Stamped by the span it replaced (its first dated original), not by when it was
        # made: a view with show_times keeps its order in time.
        created_at=next((entry.created_at for entry in window if entry.created_at), None),
        covered=squash.covered,
        squash_n=squash.n,
        squash_sha256=squash.sha256,
    )


async def restore(
    env: Env,
    alias: str,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> Restored:
    """Undo a squash: its originals take the summary's place again."""
    ref = parse_alias(alias)
    if ref.family != "SQ":
        raise InvalidRequest(
            f"{alias!r} names a message, not a squash; frs_restore takes a squash alias like "
            "SQ.2 (shown in the view as 'Summary of ... (SQ.2@...)')."
        )
    async with mutation(env, session_id, expected_revision) as m:
        session = m.session
        squash = await get_squash(m.tx, session, ref.n)
        if not sha_matches(ref, squash.sha256):
            raise sha_mismatch(alias, squash.alias)
        if squash.restored:
            raise AlreadyRestored(ref.name)
        summary = await m.tx.message(session.id, squash.summary_number)
        assert summary is not None  # written with the squash, never deleted
        if not summary.live:
            outer = await m.tx.squash_holding(session.id, summary.number or 0)
            raise CoveredByLaterSquash(ref.name, f"SQ.{outer.n}" if outer else "a later squash")
        members = await m.tx.squash_members(session.id, squash.n)
        first = (await m.tx.positions_of(session.id, [summary.ord]))[0]
        await m.tx.apply_restore(session.id, squash, summary, members, m.now)
        lanes = dict(session.lanes)
        lanes["summary"] -= 1
        for member in members:
            lanes[member.lane] = lanes.get(member.lane, 0) + 1
        m.session = replace(
            session,
            live_count=session.live_count - 1 + len(members),
            live_tokens=session.live_tokens - summary.tokens + sum(e.tokens for e in members),
            lanes=lanes,
        )
        m.change = f"restored SQ.{squash.n}"
    return Restored(session.id, squash, first, first + len(members) - 1, m.session.revision)


async def get_squash(reader: ThreadReader, session: Session, n: int) -> Squash:
    """Squash n of the session; raises AliasNotFound naming the squashes there are."""
    squash = await reader.squash(session.id, n)
    if squash is None:
        known = session.next_squash - 1
        detail = (
            f"session {session.id} has squashes SQ.1..SQ.{known}."
            if known
            else f"session {session.id} has no squashes yet."
        )
        raise AliasNotFound(f"SQ.{n}", detail)
    return squash


def _now_at(done: Range, planned: Sequence[Range]) -> int:
    """Where a range's summary sits after the call: moved up by what the ranges before it
    gave up."""
    return done.first - sum(len(r.window) - 1 for r in planned if r.first < done.first)


#: Entries after a squash read to size them; past this many, the thread's whole size stands
#: in for them (an upper bound: the economics then say it pays back slowly, which it does).
AFTER_READ = 2_000


async def _after_tokens(m: Mutation, position: int) -> int:
    """Estimated tokens of the entries after `position`, as the mutation leaves them."""
    after = m.session.live_count - position
    if after <= 0:
        return 0
    if after > AFTER_READ:
        return m.session.live_tokens
    entries = await m.tx.entries_at(m.session.id, position + 1, after)
    return sum(entry.tokens for entry in entries)


async def _reach(m: Mutation, squash: Squash) -> Reach | None:
    """When the squash reaches the model, for a thread a gateway sends (a host conversation's
    session, and the gateway has forwarded a call of it); None for any other thread."""
    if m.session.interface is None or not await m.tx.gateway_calls(m.session.id, 1):
        return None
    compactions = await m.tx.compactions(m.session.id)
    # A squash's originals sit at ords first..last; a message's ord is its number.
    if compactions and squash.last < compactions[-1].sent_from:
        return "gone"
    newest = await m.tx.entries_at(m.session.id, m.session.live_count, 1)
    summary_last = newest[0].kind == "summary" and newest[0].squash_n == squash.n
    return (
        "open"
        if summary_last and _waits(await m.tx.squash_members(m.session.id, squash.n))
        else "next"
    )


def _waits(members: Sequence[Message]) -> bool:
    """Whether the newest of these originals are the open tool loop: an assistant's calls
    that have not all been answered after it, or the results that answer the newest calls
    (the model's next answer is to them)."""
    last = members[-1]
    return bool(last.tool_calls) or last.role == "tool"


def _counts(session: Session) -> tuple[int, int]:
    return session.live_count, session.revision
