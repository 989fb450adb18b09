"""What an alias stands for, one page at a time: `get_alias`.

`M.n` is a message's full text, live or not (a message squashed away says into which squash);
`SQ.n` is every original a squash replaced, rendered whole; a source alias is the source's
current text. A page names the call for the next one.
"""

from __future__ import annotations

from frs.aliases import Page, parse_alias, sha_matches, sha_mismatch
from frs.env import Env
from frs.errors import AliasNotFound, InvalidRequest
from frs.model import Message, Session, SessionId
from frs.originals import render_parts
from frs.ports import ThreadReader
from frs.sessions import existing, find
from frs.sources import current_text
from frs.squashes import find_squash
from frs.text import message_body
from frs.views.render import plural


async def get_alias(
    env: Env,
    alias: str,
    offset: int = 0,
    max_chars: int | None = None,
    session_id: SessionId | None = None,
) -> Page:
    """One page of the full text behind an alias, from `offset`, of at most `max_chars`
    (default `Limits.page_chars`)."""
    if offset < 0 or (max_chars is not None and max_chars < 1):
        raise InvalidRequest(
            f"offset={offset}, max_chars={max_chars}: offset is 0 or more and max_chars 1 "
            "or more (or None for the default page)."
        )
    ref = parse_alias(alias)
    size = max_chars or env.limits.page_chars
    if ref.is_source:
        session = await existing(env, session_id)
        text, heading = await current_text(env, session, ref)
    else:
        async with env.store.snapshot() as reader:
            found = await find(env, reader, session_id)
            if found is None:
                raise AliasNotFound(ref.name, "there is no session yet; record messages first.")
            if ref.family != "M":
                heading, piece, end, total = await _squash_page(reader, found, alias, offset, size)
                return Page(ref.name, heading, piece, offset, end, total, session_id, max_chars)
            text, heading = await _message_text(reader, found, ref.n, alias)
    _check_offset(ref.name, offset, len(text))
    end = min(len(text), offset + size)
    return Page(ref.name, heading, text[offset:end], offset, end, len(text), session_id, max_chars)


async def _squash_page(
    reader: ThreadReader, session: Session, alias: str, offset: int, size: int
) -> tuple[str, str, int, int]:
    """A page of a squash's originals: its heading, its text, where it ends, the whole's
    length. Only the members the page overlaps are read and rendered, so a page of a 100 MB
    squash costs what its own characters cost."""
    ref = parse_alias(alias)
    squash = await find_squash(reader, session, ref.n)
    if not sha_matches(ref, squash.sha256):
        raise sha_mismatch(alias, squash.alias)
    heading = (
        f"{squash.alias} · the {squash.count} entries squashed into one summary "
        f"(numbers {squash.first}–{squash.last})" + (" · restored" if squash.restored else "")
    )
    _check_offset(ref.name, offset, squash.chars)
    end = min(squash.chars, offset + size)
    first, members = await reader.squash_members_at(session.id, squash.n, offset, end)
    piece = "\n".join(render_parts(members))[offset - first : end - first]
    if len(piece) < end - offset:
        # The page ends on the newline before a member that starts at `end`, not read.
        piece += "\n"
    return heading, piece, end, squash.chars


def _check_offset(name: str, offset: int, total: int) -> None:
    if offset > total:
        raise InvalidRequest(
            f"offset={offset:,} is past the end: {name} has {total:,} characters. "
            "Use an offset from 0 to the size."
        )


async def _message_text(
    reader: ThreadReader, session: Session, number: int, alias: str
) -> tuple[str, str]:
    message = await reader.message(session.id, number)
    name = f"M.{number}"
    if message is None:
        raise AliasNotFound(name, numbers_given(session))
    if not sha_matches(parse_alias(alias), message.sha256):
        raise sha_mismatch(alias, f"{name}@{message.sha8}")
    state = "" if message.live else await _absence(reader, session, message)
    role = "Summary" if message.kind == "summary" else message.role.capitalize()
    return message_body(
        message.content, message.tool_calls
    ), f"{name}@{message.sha8} · {role}{state}"


def numbers_given(session: Session) -> str:
    """Which M.<number> exist, in the terms the view's footer counts: summaries take numbers
    too, so the last number can be past the count of messages recorded."""
    top = session.next_number - 1
    if not top:
        return f"session {session.id} has no messages yet."
    summaries = top - session.recorded
    what = plural(session.recorded, "recorded message")
    if summaries:
        what += f" and {plural(summaries, 'summary')}"
    return f"message numbers in session {session.id} run from M.1 to M.{top} ({what})."


async def _absence(reader: ThreadReader, session: Session, message: Message) -> str:
    """Why a message is not in the thread: squashed (into which squash), or a summary whose
    squash was restored."""
    holder = await reader.squash_holding(session.id, message.number or 0)
    if holder is not None:
        return f" · not in the thread (squashed into SQ.{holder.n})"
    if message.kind == "summary":
        return f" · not in the thread (SQ.{message.squash_n} was restored)"
    return " · not in the thread"
