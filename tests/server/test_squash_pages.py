"""get_alias pages of a squash: each renders only the members it overlaps (issue 13), and the
pages, put together, are byte for byte the originals as `frs.originals.render_originals` renders
them whole, at every page size and across a nested squash."""

from __future__ import annotations

import re
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from frs.originals import render_originals
from server import Settings, build_server
from server.mcp.deps import open_deps
from storage import Database, SqliteStore, open_database
from tests.calls import call, text_of
from tests.conftest import Connect

SPAN = re.compile(r"chars (?P<start>[\d,]+)–(?P<end>[\d,]+) of (?P<total>[\d,]+)$")


def thread(count: int) -> list[dict[str, Any]]:
    """Messages of every shape: multi-line text, a call and its result, markers to escape."""
    messages: list[dict[str, Any]] = []
    for i in range(count):
        if i % 5 == 1:
            call_ = {"id": f"c{i}", "name": "bash", "arguments": {"cmd": f"ls {i}"}}
            messages.append({"role": "assistant", "content": f"run {i}", "tool_calls": [call_]})
            messages.append(
                {"role": "tool", "name": "bash", "tool_call_id": f"c{i}", "content": f"[{i}]\nok"}
            )
        else:
            messages.append({"role": "user", "content": f"line {i}\n  (indented)\n\\slash {i}"})
    return messages


async def pages(client: Client, alias: str, size: int) -> tuple[str, int]:
    """Every page of `alias` at `size` characters, joined, and the size the pages give."""
    text, offset = "", 0
    while True:
        page = text_of(await call(client, "get_alias", alias=alias, offset=offset, max_chars=size))
        heading, body = page.split("\n", 1)
        found = SPAN.search(heading)
        assert found, heading
        start, end, total = (int(found[k].replace(",", "")) for k in ("start", "end", "total"))
        if end < total:
            body = body[: body.rindex("\n… ")]  # the next call's line
        assert (start, len(body)) == (offset, end - start)
        text += body
        if end == total:
            return text, total
        offset = end


async def whole(db_path: Path, n: int) -> str:
    """Squash `n`'s originals rendered whole, as the page text once was."""
    with closing(sqlite3.connect(db_path)) as conn:
        (sid,) = conn.execute("select id from sessions").fetchone()
    async with open_database(db_path) as db, SqliteStore(db).snapshot() as reader:
        return render_originals(await reader.squash_members(sid, n))


class TestPages:
    @pytest.mark.parametrize("size", [1, 7, 64, 1_000, 20_000])
    async def test_the_pages_put_together_are_the_originals_byte_for_byte(
        self, connect: Connect, db_path: Path, size: int
    ) -> None:
        async with connect() as client:
            await call(client, "frs_record", messages=thread(40))
            await call(client, "frs_compress_range", **{"from": 5, "to": 9}, summary="inner")
            await call(client, "frs_compress_range", **{"from": 2, "to": 30}, summary="outer")
            joined, total = await pages(client, "SQ.2", size)
        expected = await whole(db_path, 2)
        assert joined == expected
        assert total == len(expected)

    async def test_a_page_reads_only_the_members_it_overlaps(self, tmp_path: Path) -> None:
        """SQLite's progress handler counts virtual-machine steps on the server's reader: a
        page in the middle of a 2,000-member squash costs about what one of a 20-member squash
        costs (it once read, and rendered, every member for every page)."""

        async def steps(count: int) -> int:
            settings = Settings(database=str(tmp_path / f"{count}.db"))
            async with open_deps(settings) as deps:
                counted = [0]

                def tick() -> int:
                    counted[0] += 1
                    return 0  # continue

                assert isinstance(deps.db, Database)  # SQLite's own step counter
                await deps.db._reader.set_progress_handler(tick, 100)
                async with Client(build_server(settings, shared=deps)) as client:
                    messages = [
                        {"role": "user", "content": f"m{i} " + "x" * 200} for i in range(count)
                    ]
                    await call(client, "frs_record", messages=messages)
                    await call(client, "frs_compress_last", count=count, summary="all of it")
                    await call(client, "get_alias", alias="SQ.1", max_chars=100)  # warm up
                    total = count * 210
                    counted[0] = 0
                    await call(client, "get_alias", alias="SQ.1", offset=total // 2, max_chars=100)
                return counted[0]

        small, big = await steps(20), await steps(2_000)
        assert small > 0
        assert big < 3 * small, (big, small)
