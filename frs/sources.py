"""Context sources: registering, forgetting and reading them, and checking them for drift.

A source is text the agent refers to by alias (`H.main`, `D.notes`): inline text, stored
whole, or a file under an allowed root, read through the `FileReader` port. A file is hashed
when registered; every later read re-hashes it, and a different hash is drift, reported with
the old and new sha8 while the current text is served.
"""

from __future__ import annotations

from dataclasses import dataclass

from frs.aliases import (
    AliasRef,
    check_prefix,
    derive_name,
    derive_prefix,
    parse_alias,
    parse_source_alias,
    sha_matches,
    sha_mismatch,
)
from frs.env import Env
from frs.errors import AliasNotFound, AliasTaken, FrsError, InvalidAlias, InvalidRequest
from frs.escaping import escape_inline
from frs.model import FileText, Session, SessionId, Source
from frs.mutation import mutation
from frs.ports import ThreadReader
from frs.sessions import ensure
from frs.text import check_text, sha256_hex


@dataclass(frozen=True, slots=True)
class SourceState:
    """A source as it is now: its current hash, or why it cannot be read."""

    source: Source
    sha256: str | None  # None when the file cannot be read now
    problem: str = ""

    @property
    def changed(self) -> bool:
        return self.sha256 is not None and self.sha256 != self.source.sha256

    def line(self) -> str:
        """`H.main@9f8e7d6c handlers/main.py · 120 lines`, with drift marked."""
        s = self.source
        text = f"{s.alias}@{s.sha8} {s.where} · {s.lines:,} line{'' if s.lines == 1 else 's'}"
        if self.sha256 is None:
            text = f"{text} · unreadable: {self.problem}"
        elif self.changed:
            text = f"{text} · changed: now @{self.sha256[:8]}"
        # A file's name may hold a newline: spelled out, it cannot start a line of its own.
        return escape_inline(text)


@dataclass(frozen=True, slots=True)
class SourceChanged:
    """A source registered or removed, and the revision that did it."""

    session_id: SessionId
    source: Source
    revision: int


@dataclass(frozen=True, slots=True)
class SourceStates:
    session: Session
    states: tuple[SourceState, ...]


async def add(
    env: Env,
    alias: str | None = None,
    text: str | None = None,
    path: str | None = None,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> SourceChanged:
    """Register inline text or a file (read now, under an allowed root) under an alias."""
    if (text is None) == (path is None):
        raise InvalidRequest(
            "Give either text=... (inline) or path=... (a file under an allowed root), "
            "not both and not neither."
        )
    if path is not None:
        check_text(path, "path")
        source = _file_source(alias, await env.file_reader().read(path), env.clock())
    else:
        assert text is not None
        source = _text_source(alias, text, env)
    async with mutation(env, session_id, expected_revision) as m:
        taken = await _find(m.tx, m.session.id, source.alias)
        if taken is not None:
            raise AliasTaken(source.alias, f"{taken.where} (@{taken.sha8})")
        await m.tx.add_source(m.session.id, source)
        m.change = f"registered source {source.alias}"
    return SourceChanged(m.session.id, source, m.session.revision)


def _file_source(alias: str | None, found: FileText, now: str) -> Source:
    return Source(
        alias=source_alias(alias, found.display),
        kind="file",
        sha256=found.sha256,
        chars=len(found.text),
        lines=count_lines(found.text),
        created_at=now,
        path=found.path,
        display=found.display,
    )


def _text_source(alias: str | None, text: str, env: Env) -> Source:
    name = source_alias(alias, None)
    if len(text) > env.limits.max_message_chars:
        raise InvalidRequest(
            f"The text has {len(text):,} characters; the limit is "
            f"{env.limits.max_message_chars:,}. Register a file (path=...) instead."
        )
    check_text(text, "The text")
    return Source(
        alias=name,
        kind="text",
        sha256=sha256_hex(text),
        chars=len(text),
        lines=count_lines(text),
        created_at=env.clock(),
        text=text,
    )


async def remove(
    env: Env,
    alias: str,
    session_id: SessionId | None = None,
    expected_revision: int | None = None,
) -> SourceChanged:
    """Forget a source (its file is untouched); its alias becomes free."""
    ref = parse_alias(alias)
    async with mutation(env, session_id, expected_revision) as m:
        source = await get(m.tx, m.session, ref.name)
        await m.tx.remove_source(m.session.id, ref.name)
        m.change = f"removed source {ref.name}"
    return SourceChanged(m.session.id, source, m.session.revision)


async def states(env: Env, session_id: SessionId | None = None, check: bool = True) -> SourceStates:
    """Every source of the session; with `check`, files are re-read and re-hashed now."""
    session = await ensure(env, session_id)
    async with env.store.snapshot() as reader:
        sources = await reader.sources(session.id)
    return SourceStates(session, tuple([await _state(env, source, check) for source in sources]))


async def _state(env: Env, source: Source, check: bool) -> SourceState:
    if source.kind == "text" or not check:
        return SourceState(source, source.sha256)
    try:
        found = await env.file_reader().read(source.path or "")
    except FrsError as exc:
        return SourceState(source, None, str(exc))
    return SourceState(source, found.sha256)


async def current_text(env: Env, session: Session, ref: AliasRef) -> tuple[str, str]:
    """A source's text as it is now, and the heading a page of it shows (with drift, if any)."""
    async with env.store.snapshot() as reader:
        source = await get(reader, session, ref.name)
    if source.kind == "text":
        if not sha_matches(ref, source.sha256):
            raise sha_mismatch(f"{ref.name}@{ref.sha8}", f"{ref.name}@{source.sha8}")
        return source.text or "", f"{ref.name}@{source.sha8} · inline text"
    found = await env.file_reader().read(source.path or "")
    if not (sha_matches(ref, source.sha256) or sha_matches(ref, found.sha256)):
        raise sha_mismatch(f"{ref.name}@{ref.sha8}", f"{ref.name}@{found.sha256[:8]}")
    heading = f"{ref.name}@{found.sha256[:8]} · {escape_inline(source.where)}"
    if found.sha256 != source.sha256:
        heading += (
            f" · changed since registered (was @{source.sha8}, now @{found.sha256[:8]}); "
            "this is the current content"
        )
    return found.text, heading


async def get(reader: ThreadReader, session: Session, name: str) -> Source:
    """The source registered under `name`; raises AliasNotFound listing the ones there are."""
    source = await _find(reader, session.id, name)
    if source is None:
        known = [s.alias for s in await reader.sources(session.id)]
        listed = ", ".join(known) if known else "none yet"
        raise AliasNotFound(
            name,
            f"no such source in session {session.id} (registered: {listed}). "
            "Register one with frs_source(action='add').",
        )
    return source


async def _find(reader: ThreadReader, session_id: SessionId, alias: str) -> Source | None:
    return next((s for s in await reader.sources(session_id) if s.alias == alias), None)


def source_alias(alias: str | None, file_name: str | None) -> str:
    """The alias to register: given in full, a prefix plus the file's name, or derived."""
    if alias is not None and "." in alias:
        return parse_source_alias(alias).name
    if file_name is None:
        raise InvalidAlias(
            alias or "",
            "inline text needs a full alias such as D.notes or A.decision",
        )
    prefix = check_prefix(alias) if alias is not None else derive_prefix(file_name)
    return f"{prefix}.{derive_name(file_name)}"


def count_lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
