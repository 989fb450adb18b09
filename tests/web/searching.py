"""What the viewer's tests and the transports' tests share: a store whose first search waits
for the test, the search race they run against it, and a socket read until the server closes it."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass

import anyio
import httpx2

from frs.ports import ThreadReader
from server.web.app import Readable


class FirstSearchWaits:
    """The viewer's real read-only store, whose first search waits for `gate`: a search
    under way for as long as the test needs, without a slow query to time."""

    def __init__(self, store: Readable) -> None:
        self.store = store
        self.entered, self.gate = anyio.Event(), anyio.Event()

    def snapshot(self) -> AbstractAsyncContextManager[ThreadReader]:
        return self.store.snapshot()

    @asynccontextmanager
    async def searching(self, seconds: float) -> AsyncIterator[ThreadReader]:
        if not self.entered.is_set():
            self.entered.set()
            await self.gate.wait()
        async with self.store.searching(seconds) as reader:
            yield reader


@dataclass(frozen=True, slots=True)
class Race:
    """What each search answered: `first` (tenant `mine`, held by the store), `second`
    (`mine` again meanwhile), `other` (another tenant meanwhile), `again` (`mine` after)."""

    first: httpx2.Response
    second: httpx2.Response
    other: httpx2.Response
    again: httpx2.Response


async def search_race(
    http: httpx2.AsyncClient, page: str, store: FirstSearchWaits, mine: str, other: str
) -> Race:
    """Search `page` for "tokenizer" as `mine` (the store holds it), then as `mine` and as
    `other` meanwhile; release the first, then search as `mine` once more."""

    async def search(token: str) -> httpx2.Response:
        auth = {"Authorization": f"Bearer {token}"}
        return await http.get(page, params={"q": "tokenizer"}, headers=auth)

    first: list[httpx2.Response] = []

    async def first_search() -> None:
        first.append(await search(mine))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first_search)
        with anyio.fail_after(30):
            await store.entered.wait()
        second = await search(mine)
        theirs = await search(other)
        store.gate.set()
    again = await search(mine)
    return Race(first[0], second, theirs, again)


def drained(sock: socket.socket) -> bytes:
    """What the socket holds until the server's end closes it (a bound: 30 s)."""
    sock.settimeout(30)
    got = b""
    try:
        while chunk := sock.recv(1 << 20):
            got += chunk
    except ConnectionResetError:
        pass
    return got
