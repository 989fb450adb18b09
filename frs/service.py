"""`ReasoningService`: every use case behind one object, for tools and runtimes.

Each use case lives in the module named after what it changes (`frs.sessions`,
`frs.recording`, `frs.squashes`, `frs.focus`, `frs.sources`, `frs.plans`, `frs.pages`) and
runs against an `Env`; this class holds the `Env`, keeps the frames views reuse, and adds
nothing else. Every mutation runs in `frs.mutation`'s frame: one transaction, one revision, a
stale `expected_revision` changes nothing.
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace

from frs import focus, pages, plans, recording, sessions, sources, squashes
from frs.aliases import Page
from frs.env import Clock, Env, Offload, inline, utc_now
from frs.export import to_anthropic, to_openai
from frs.focus import LayerClosed, LayerOpened
from frs.model import Limits, NewMessage, Numbering, PlanStep, Scope, Session, SessionId
from frs.plans import PlanUpdated
from frs.ports import FileReader, Store, ThreadReader
from frs.ranges import AskedRange
from frs.recording import Progress, Recorded, Removed
from frs.sessions import LiveThread, SessionPage, SessionStarted, SquashLog
from frs.sources import SourceChanged, SourceStates
from frs.squashes import Restored, Squashed
from frs.views import Frame, ViewOptions, check_view_options, load_frame, render_thread

_FRAMES_KEPT = 64


class ReasoningService:
    """Sessions, threads, squashes and plans over a `Store`; the one API tools and runtimes use.

    It serves one caller's scope (`for_scope` makes one for another caller): a method that
    takes `session_id` finds only that tenant's sessions, and uses the caller's current
    session when it is None; one that writes creates a first session if there is none.
    """

    def __init__(
        self,
        store: Store,
        limits: Limits | None = None,
        clock: Clock = utc_now,
        files: FileReader | None = None,
        scope: Scope | None = None,
        offload: Offload = inline,
    ) -> None:
        self.env = Env(store, limits or Limits(), clock, files, scope or Scope(), offload=offload)
        # Plan, checkpoints and open layers by (session, revision): every change to them bumps
        # the revision, which is read in the same snapshot, so an entry can never be stale.
        self._frames: OrderedDict[tuple[str, int], Frame] = OrderedDict()

    def for_scope(self, scope: Scope) -> ReasoningService:
        """The same service for another caller: `scope`'s tenant's sessions only, its current
        session. Shares the store, the frames and the connections' choices."""
        twin = copy.copy(self)
        twin.env = replace(self.env, scope=scope)
        return twin

    @property
    def scope(self) -> Scope:
        return self.env.scope

    @property
    def store(self) -> Store:
        return self.env.store

    @property
    def limits(self) -> Limits:
        return self.env.limits

    # -- sessions --------------------------------------------------------------------------------

    async def start_session(
        self,
        title: str = "",
        goal: str = "",
        numbering: Numbering = "position",
        interface: str | None = None,
        conversation: str | None = None,
    ) -> SessionStarted:
        return await sessions.start(self.env, title, goal, numbering, interface, conversation)

    async def use_session(self, session_id: SessionId) -> Session:
        return await sessions.use(self.env, session_id)

    async def set_aside(self, session_id: SessionId) -> Session:
        return await sessions.set_aside(self.env, session_id)

    async def list_sessions(self, limit: int = 50, offset: int = 0) -> SessionPage:
        return await sessions.page(self.env, limit, offset)

    async def get_session(self, session_id: SessionId) -> Session:
        """The session with this id; raises SessionNotFound. A read: it never creates one."""
        async with self.env.store.snapshot() as reader:
            return await sessions.get(self.env, reader, session_id)

    async def find_current_session(self) -> Session | None:
        """The caller's current session; None when there is none yet. A read: it never
        creates one."""
        async with self.env.store.snapshot() as reader:
            return await sessions.find_current(self.env, reader)

    async def ensure_session(self, session_id: SessionId | None = None) -> Session:
        """The given session (raises SessionNotFound), else the current one, created if the
        caller has none."""
        return await sessions.ensure(self.env, session_id)

    async def live_thread(self, session_id: SessionId | None = None) -> LiveThread:
        return await sessions.live_thread(self.env, session_id)

    async def squash_log(self, session_id: SessionId | None = None) -> SquashLog:
        return await sessions.squash_log(self.env, session_id)

    # -- the thread ------------------------------------------------------------------------------

    async def record(
        self,
        messages: Sequence[NewMessage],
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
        progress: Progress | None = None,
    ) -> Recorded:
        return await recording.record(self.env, messages, session_id, expected_revision, progress)

    async def remove_newest(
        self, session_id: SessionId | None = None, expected_revision: int | None = None
    ) -> Removed | None:
        return await recording.remove_newest(self.env, session_id, expected_revision)

    async def view(self, options: ViewOptions, session_id: SessionId | None = None) -> str:
        """The numbered rendering of the thread (DESIGN §5); reads only the entries it shows."""
        check_view_options(options)
        lines: list[str] = []
        if options.show_sources:
            # Files are re-read outside the snapshot: a slow disk holds no read open.
            found = await sources.states(self.env, session_id)
            session_id, lines = found.session.id, [state.line() for state in found.states]
        async with self.env.store.snapshot() as reader:
            if session_id is not None:
                session: Session | None = await sessions.get(self.env, reader, session_id)
            else:
                session = await sessions.find_current(self.env, reader)
            if session is not None:
                frame = await self._frame(reader, session)
                return await render_thread(reader, session, options, self.limits, lines, frame)
        # No session yet: a view creates the first one, as every tool without a session does.
        session = await sessions.ensure(self.env, session_id)
        async with self.env.store.snapshot() as reader:
            frame = await self._frame(reader, session)
            return await render_thread(reader, session, options, self.limits, lines, frame)

    async def _frame(self, reader: ThreadReader, session: Session) -> Frame:
        key = (session.id, session.revision)
        frame = self._frames.get(key)
        if frame is None:
            frame = self._frames[key] = await load_frame(reader, session)
            if len(self._frames) > _FRAMES_KEPT:
                self._frames.popitem(last=False)
        return frame

    async def get_alias(
        self,
        alias: str,
        offset: int = 0,
        max_chars: int | None = None,
        session_id: SessionId | None = None,
    ) -> Page:
        return await pages.get_alias(self.env, alias, offset, max_chars, session_id)

    async def export_openai(self, session_id: SessionId | None = None) -> list[dict[str, object]]:
        """The live thread as Chat Completions messages (`frs.export`)."""
        return to_openai(list((await self.live_thread(session_id)).entries))

    async def export_anthropic(self, session_id: SessionId | None = None) -> dict[str, object]:
        """The live thread as a Messages API payload: `system` and alternating turns."""
        return to_anthropic(list((await self.live_thread(session_id)).entries))

    async def export_text(self, session_id: SessionId | None = None) -> str:
        """The whole thread as the view renders it: a window from position 1, never
        budgeted, every card whole."""
        return await self.view(ViewOptions(preview_chars=10**9, start=1), session_id)

    # -- squashes --------------------------------------------------------------------------------

    async def compress_range(
        self,
        start: int,
        end: int,
        summary: str,
        numbering: Numbering | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Squashed:
        """Replace the entries at positions (or, absolute, numbers) start..end by a summary."""
        (done,) = await self.compress_ranges(
            [AskedRange(start, end, summary)], numbering, session_id, expected_revision
        )
        return done

    async def compress_ranges(
        self,
        ranges: Sequence[AskedRange],
        numbering: Numbering | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
        automatic: bool = False,
    ) -> tuple[Squashed, ...]:
        return await squashes.compress_ranges(
            self.env, ranges, numbering, session_id, expected_revision, automatic
        )

    async def compress_last(
        self,
        count: int,
        summary: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Squashed:
        return await squashes.compress_last(self.env, count, summary, session_id, expected_revision)

    async def restore(
        self,
        alias: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> Restored:
        return await squashes.restore(self.env, alias, session_id, expected_revision)

    async def open_focus(
        self,
        goal: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> LayerOpened:
        return await focus.open_layer(self.env, goal, session_id, expected_revision)

    async def close_focus(
        self,
        summary: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> LayerClosed:
        return await focus.close_layer(self.env, summary, session_id, expected_revision)

    # -- sources and plan ------------------------------------------------------------------------

    async def add_source(
        self,
        alias: str | None = None,
        text: str | None = None,
        path: str | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> SourceChanged:
        return await sources.add(self.env, alias, text, path, session_id, expected_revision)

    async def remove_source(
        self,
        alias: str,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> SourceChanged:
        return await sources.remove(self.env, alias, session_id, expected_revision)

    async def source_states(
        self, session_id: SessionId | None = None, check: bool = True
    ) -> SourceStates:
        return await sources.states(self.env, session_id, check)

    async def update_plan(
        self,
        steps: Sequence[PlanStep] | None = None,
        checkpoint: str | None = None,
        session_id: SessionId | None = None,
        expected_revision: int | None = None,
    ) -> PlanUpdated:
        return await plans.update(self.env, steps, checkpoint, session_id, expected_revision)
