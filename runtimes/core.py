"""What every runtime adapter shares: one conversation of a runtime kept as one FRS session.

A `Conversation` opens the store at a database path (a SQLite file, or a ``postgresql://`` URL)
on first use, in the running event loop, and finds its session by get-or-create on
(interface, conversation): the runtime's name and its own session id. frs-mcp over MCP on the
same database finds the same session with ``frs_session(action="start", interface=...,
conversation=...)``. It records what the runtime hands in, reads the newest entries back in one
statement, and offers the five FRS tool operations (`FrsTools`) as plain async methods bound
to it, each answering with the text the MCP tool answers with; each adapter wraps them in its
framework's tool form. It reaches the domain as every edge does: the `frs` use cases, with the
`frs.Env` of its store.

Two ids, one name each: the runtime's own id of a conversation (the SDK's session id, a
LangGraph thread id, an ADK session id) is its `conversation`; FRS's id of the session that
keeps it is `frs_session_id()`.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Literal

from frs import (
    AskedRange,
    Env,
    Message,
    NewMessage,
    Recorded,
    SessionId,
    ViewOptions,
    pages,
    recording,
    replies,
    sessions,
    squashes,
    viewing,
)
from frs.autopilot import Autopilot, Batch, plan_batch
from frs.errors import StaleRevision
from frs.host_threads import squash_kinds
from frs.model import Limits
from frs.raw import Raw
from frs.views.render import summary_prefix
from runtimes.stores import SharedStore

#: The newest entries the autopilot reads in a runtime's thread: the model is sent all of them.
AUTOPILOT_WINDOW = 2_000


class Conversation:
    """One conversation of a runtime, kept as the FRS session (interface, conversation).

    `db` is a database path (this conversation opens and closes its own store: use ``async
    with``, or `close`) or a `SharedStore` several conversations use. Nothing is opened until
    the first call. `title` names the session when this conversation creates it. With
    `autopilot`, each recording is followed by the autopilot's turn (`squash_on_its_own`):
    finished tool exchanges become fact cards in batches that pay back, as the gateway does.
    """

    def __init__(
        self,
        db: str | os.PathLike[str] | SharedStore,
        interface: str,
        conversation: str,
        *,
        title: str | None = None,
        autopilot: Autopilot | None = None,
    ) -> None:
        self._owned = not isinstance(db, SharedStore)
        self.store = db if isinstance(db, SharedStore) else SharedStore(db)
        self.interface = interface
        self.conversation = conversation
        self.title = title or f"{interface} {conversation}"
        self.autopilot = autopilot
        self._frs_session_id: SessionId | None = None

    async def env(self) -> Env:
        """The `Env` over the store, opening it on the first call."""
        return await self.store.env()

    async def close(self) -> None:
        """Close the store if this conversation opened it; the next call opens it again."""
        self._frs_session_id = None
        if self._owned:
            await self.store.close()

    async def __aenter__(self) -> Conversation:
        await self.env()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- the session --------------------------------------------------------------------------

    async def frs_session_id(self) -> SessionId:
        """The id of the FRS session that keeps this conversation, created (and made current)
        on first use."""
        env = await self.env()
        if self._frs_session_id is None:
            started = await sessions.start(
                env, title=self.title, interface=self.interface, conversation=self.conversation
            )
            self._frs_session_id = started.session.id
        return self._frs_session_id

    async def record(self, messages: Sequence[NewMessage]) -> Recorded | None:
        """Append `messages` in one transaction (None when there are none); then, with an
        autopilot, its turn."""
        if not messages:
            return None
        env = await self.env()
        done = await recording.record(env, messages, await self.frs_session_id())
        if self.autopilot is not None:
            await self.squash_on_its_own()
        return done

    async def squash_on_its_own(self) -> Batch | None:
        """The autopilot's batch (`frs.autopilot`) over the newest entries, every one of which
        the model is sent, written at the revision it was read on (a squash the model made
        meanwhile wins); None when it made none. The next call's history has the cards."""
        settings = self.autopilot
        if settings is None:
            return None
        env = await self.env()
        sid = await self.frs_session_id()
        async with env.store.snapshot() as reader:
            session = await reader.find_session(env.scope.tenant, sid)
            if session is None or session.live_tokens < settings.after:
                return None
            count = min(session.live_count, AUTOPILOT_WINDOW)
            entries = await reader.last_entries(sid, count, None)
        restored, automatic = await squash_kinds(env, sid)
        batch = plan_batch(
            entries,
            None,
            session.live_tokens,
            settings,
            next_squash=session.next_squash,
            restored=restored,
            max_chars=env.limits.max_summary_chars,
            max_ranges=env.limits.max_plan_steps,
            automatic=automatic,
        )
        if batch is None:
            return None
        ranges = [AskedRange(run.first, run.last, run.summary) for run in batch.runs]
        try:
            await squashes.compress_ranges(
                env,
                ranges,
                numbering="absolute",
                session_id=sid,
                expected_revision=session.revision,
                automatic=True,
            )
        except StaleRevision:
            return None
        return batch

    async def newest(self, count: int | None = None) -> list[Message | Raw]:
        """The newest `count` entries (all when None) in thread order, each as its `Raw` items
        when it has them, else as the Message: what the model is shown, in one statement
        (`Store.newest_entries`). It creates nothing."""
        if count is not None and count <= 0:
            return []
        env = await self.env()
        return await env.store.newest_entries(
            env.scope.tenant, self.interface, self.conversation, count
        )

    async def entries(self, count: int | None = None) -> list[Message]:
        """The newest `count` entries (all when None) in thread order, as Messages, read in
        one snapshot. It creates nothing (an unknown conversation has none)."""
        if count is not None and count <= 0:
            return []
        env = await self.env()
        async with env.store.snapshot() as reader:
            session = await reader.find_conversation(
                env.scope.tenant, self.interface, self.conversation
            )
            if session is None or session.live_count == 0:
                return []
            return await reader.last_entries(session.id, count or session.live_count, None)

    async def remove_newest(self) -> Message | None:
        """Take the newest entry back out (see `frs.recording.remove_newest`); None when the
        thread is empty. A summary there is refused (InvalidRequest)."""
        env = await self.env()
        removed = await recording.remove_newest(env, await self.frs_session_id())
        return removed.message if removed else None

    async def clear(self) -> None:
        """Start the conversation over: its session is set aside, kept whole (renamed to say
        so, found by id or in frs_session's list), and the next call creates a new one."""
        env = await self.env()
        session = await sessions.get_session(env, await self.frs_session_id())
        await sessions.set_aside(env, session.id)
        self._frs_session_id = None


def summary_role(previous: str | None) -> Literal["user", "assistant"]:
    """The role a summary is sent in, from the role of the turn the model receives right
    before it (None when nothing but system prompts does): ``user`` when it opens the thread
    or follows an assistant turn, where Anthropic and Gemini need a user turn, else
    ``assistant``. It depends only on what precedes it, so a call that keeps the prefix keeps
    the summary's role, and its bytes. An adapter merges a user-role summary into a user
    message right after it, as one user turn (turns alternate)."""
    return "assistant" if previous in ("user", "tool") else "user"


def summary_text(message: Message) -> str:
    """A summary as a model reads it in a runtime's history: what it replaced, its alias
    (get_alias reads the originals, frs_restore undoes it), then the summary itself."""
    alias = f"SQ.{message.squash_n}@{(message.squash_sha256 or '')[:8]}"
    return f"[{summary_prefix(message)} ({alias})] {message.content}"


class FrsTools:
    """The FRS tools a model uses to distill its own thread, bound to one conversation.

    Positions are those of frs_view_thread (1-based, contiguous; they shift after a squash).
    Each method answers with the text the MCP tool of the same name answers with, and raises
    `frs.FrsError` with a message the model can act on; adapters turn that into their
    framework's tool error.
    """

    def __init__(self, conversation: Conversation) -> None:
        self.conversation = conversation

    async def _bound(self) -> tuple[Env, SessionId]:
        return await self.conversation.env(), await self.conversation.frs_session_id()

    async def frs_view_thread(self, last: int | None = None) -> str:
        """Show your conversation as a numbered thread, to pick what to squash.

        Each entry is `[n] Role: text`; long ones are cards with an alias (get_alias reads
        them whole); squashed stretches show as `Summary of K messages (SQ.m@sha8)`.

        Args:
            last: Only the newest `last` entries (positions stay those of the whole thread).
        """
        env, sid = await self._bound()
        return await viewing.view(env, ViewOptions(last=last), sid)

    async def frs_compress_range(self, start: int, end: int, summary: str) -> str:
        """Squash entries start..end (inclusive) of frs_view_thread into your summary.

        From your next turn on you see the summary instead of them; the originals stay
        retrievable (get_alias) and restorable (frs_restore). Keep decisions, numbers, file
        names and open questions in the summary. A range may not separate a tool call from
        its result.

        Args:
            start: First position to squash (1-based, as frs_view_thread numbers them).
            end: Last position to squash, inclusive.
            summary: Your summary; it replaces the range.
        """
        env, sid = await self._bound()
        done = await squashes.compress_range(env, start, end, summary, session_id=sid)
        return replies.squashed(done)

    async def frs_compress_last(self, count: int, summary: str) -> str:
        """Squash the newest `count` entries of the thread into your summary.

        Use it right after finishing a step whose details you will not need verbatim.

        Args:
            count: How many of the newest entries to squash.
            summary: Your summary of them.
        """
        env, sid = await self._bound()
        return replies.squashed(await squashes.compress_last(env, count, summary, session_id=sid))

    async def get_alias(self, alias: str, offset: int = 0, max_chars: int | None = None) -> str:
        """Read the full text behind an alias: `SQ.n` the originals of a squash, `M.n` one
        message; `@sha8` optional.

        Args:
            alias: The alias, e.g. SQ.2@0b4f2d11 or M.17.
            offset: Character offset to start reading from (for long texts).
            max_chars: At most this many characters.
        """
        env, sid = await self._bound()
        page = await pages.get_alias(env, alias, offset, max_chars, session_id=sid)
        return page.render()

    async def frs_restore(self, alias: str) -> str:
        """Undo a squash: its originals take the summary's place again.

        Args:
            alias: The squash to undo: SQ.<n>, @sha8 optional.
        """
        env, sid = await self._bound()
        return replies.restored(await squashes.restore(env, alias, session_id=sid))

    def functions(self) -> list[Callable[..., Any]]:
        """The five tools as bound async functions, in the order a model should meet them."""
        return [
            self.frs_view_thread,
            self.frs_compress_range,
            self.frs_compress_last,
            self.get_alias,
            self.frs_restore,
        ]


class Conversations:
    """Every conversation of one runtime on one database, over one `SharedStore`.

    For a runtime that names the conversation per call (LangGraph's thread id, an ADK session
    id) rather than once: `get` hands out the `Conversation` of an id, all of them on the store
    this object opens on first use (one connection, not one per thread). The loop rule of
    `SharedStore` holds: close it (or ``async with``) in the loop that used it.
    """

    def __init__(
        self,
        db: str | os.PathLike[str],
        interface: str,
        *,
        limits: Limits | None = None,
        keep: int = 1024,
        autopilot: Autopilot | None = None,
    ) -> None:
        self.store = SharedStore(db, limits)
        self.interface = interface
        self.autopilot = autopilot
        # The most recently used conversations, each remembering its session id; one dropped
        # here is found again by get-or-create.
        self._conversations: OrderedDict[str, Conversation] = OrderedDict()
        self._keep = keep

    def get(self, conversation: str) -> Conversation:
        """The conversation `conversation` of this runtime, on the shared store."""
        found = self._conversations.pop(conversation, None)
        if found is None:
            found = Conversation(self.store, self.interface, conversation, autopilot=self.autopilot)
        self._conversations[conversation] = found
        while len(self._conversations) > self._keep:
            self._conversations.popitem(last=False)
        return found

    async def env(self) -> Env:
        """The `Env` over the shared store, opening it on the first call."""
        return await self.store.env()

    async def close(self) -> None:
        """Close the shared store; the next call opens it again."""
        self._conversations.clear()
        await self.store.close()

    async def __aenter__(self) -> Conversations:
        await self.env()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def newest_recorded_id(conversation: Conversation, entries: Sequence[Message]) -> str | None:
    """The interface message id of the newest message recorded with one in `entries` (the
    conversation's live thread, or its newest part), looking inside a summary at the end for
    what it replaced; None when no entry carries one.

    An adapter handed the runtime's whole history on every call (LangGraph's state, an ADK
    request) records what comes after this id, so nothing is recorded twice, even after the
    newest entries were squashed or the process restarted.
    """
    pending = list(entries)
    while pending:
        entry = pending.pop()
        if entry.kind != "summary":
            if entry.interface_message_id is not None:
                return entry.interface_message_id
            continue
        if entry.squash_n is not None:
            sid = await conversation.frs_session_id()  # before the read: it may write
            env = await conversation.env()
            async with env.store.snapshot() as reader:
                pending.extend(await reader.squash_members(sid, entry.squash_n))
    return None


def unrecorded(
    keys: Sequence[str | None], last: str | None, entries: Sequence[Message]
) -> list[int]:
    """The indexes of the items of a runtime's history to record, given each item's key (the
    `interface_message_id` it is recorded with): those after the item keyed `last`, the
    newest recorded (`newest_recorded_id`; all when None). A history that does not hold it (a
    run without a checkpointer, whose state is its input; one another middleware or the
    framework's own compaction rewrote) gives the items whose keys no live entry carries."""
    if last is None:
        return list(range(len(keys)))
    for index in range(len(keys) - 1, -1, -1):
        if keys[index] == last:
            return list(range(index + 1, len(keys)))
    live = {entry.interface_message_id for entry in entries}
    return [index for index, key in enumerate(keys) if key not in live]
