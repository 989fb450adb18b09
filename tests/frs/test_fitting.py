"""How a budgeted view shares its room (frs.fitting), through a stand-in sizer: entries of known
sizes, so each test can add up exactly what a fit uses and what an append changes (issue 22)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass

from frs.views.fitting import Fit, Tier, fit

CARD, LINE, GROUP = 90.0, 45.0, 48.0


@dataclass
class Thread:
    """`count` entries whose whole forms take 40 to 640 estimated tokens, in a fixed pattern."""

    count: int

    def whole(self, index: int) -> float:
        return 40.0 + (index * 37 % 11) * 60.0

    def position(self, index: int) -> int:
        return index + 1

    def anchor(self, index: int) -> int:
        return index + 1

    async def size(self, index: int, tier: Tier) -> float:
        whole = self.whole(index)
        return {"whole": whole, "card": min(whole, CARD), "line": min(whole, LINE)}[tier]

    async def group_size(self, lo: int, hi: int) -> float:
        return GROUP


def forms(shaped: Fit, count: int) -> list[str]:
    """How each entry is shown, oldest first: its tier, "out" when left out, or the group line
    it is in."""
    out: list[str] = []
    for index in range(count):
        if index < len(shaped.rich):
            out.append("rich " + shaped.rich[index])
        elif index < shaped.head:
            out.append("line")
        elif index < shaped.first:
            out.append("out")
        else:
            tier = shaped.tiers[index - shaped.first]
            out.append(f"group {index // shaped.per_group}" if tier == "group" else tier)
    return out


async def used(thread: Thread, shown: list[str]) -> list[float]:
    """What each entry adds to the view (a group line counts once, at its first entry)."""
    sizes: list[float] = []
    for index, form in enumerate(shown):
        if form == "out":
            sizes.append(0.0)
        elif form.startswith("group"):
            sizes.append(GROUP if index == 0 or shown[index - 1] != form else 0.0)
        else:
            tier = form.removeprefix("rich ")
            sizes.append(await thread.size(index, tier))  # type: ignore[arg-type]
    return sizes


async def shown_at(room: float, count: int) -> tuple[list[str], list[float]]:
    thread = Thread(count)
    shaped = await fit(thread, room)
    assert shaped is not None
    shown = forms(shaped, count)
    return shown, await used(thread, shown)


def kept(before: tuple[list[str], list[float]], after: tuple[list[str], list[float]]) -> float:
    """The share of the first view's tokens before the first entry shown differently."""
    (a, sizes), (b, _) = before, after
    same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))
    return sum(sizes[:same]) / sum(sizes)


ROOMS = (850.0, 3_700.0, 19_000.0)  # the entries' room at budgets 1,000, 4,000 and 20,000


async def views(room: float) -> list[tuple[list[str], list[float]]]:
    """The thread viewed after each append, from where its entries whole outgrow the room."""
    start = next(n for n in range(1, 2_000) if sum(Thread(n).whole(i) for i in range(n)) > room)
    return [await shown_at(room, n) for n in range(start, start + 240)]


class TestFill:
    async def test_a_fitted_view_uses_most_of_its_room_and_never_more(self) -> None:
        for room in ROOMS:
            uses = sorted(sum(sizes) / room for _, sizes in await views(room))
            assert uses[-1] <= 1.0, room
            # Under 2,500 tokens there is no band: below the head, one-line cards on blocks of
            # 2 positions (78% at 850 tokens on blocks of 8, which left them empty).
            least = 0.85 if room < 2_500 else 0.9
            assert uses[len(uses) // 2] >= least, (room, uses[len(uses) // 2])

    async def test_unused_frame_room_goes_to_the_band_alone(self) -> None:
        grew = 0
        async for _, _, after, changed in spent_in(3_700.0, 200.0):
            if changed is not None:
                # Only the band grew upward: no region's start moved.
                assert all(form in ("whole", "card") for form in after[changed:]), after
                grew += 1
        assert grew > 20

    async def test_unused_frame_room_goes_below_a_small_rooms_head(self) -> None:
        grew = 0
        async for head, before, after, changed in spent_in(850.0, 60.0):
            if changed is not None:
                # More of the newest entries are one-line cards; the head is as it was.
                assert changed >= head
                assert after.count("out") < before.count("out")
                grew += 1
        assert grew > 60


async def spent_in(
    room: float, spare: float
) -> AsyncIterator[tuple[int, list[str], list[str], int | None]]:
    """Threads of 200 to 319 entries fitted without and with `spare`: the head (the same in
    both), how each entry is shown in both, and the first entry shown otherwise (None: none
    is); never over room + spare."""
    for count in range(200, 320):
        thread = Thread(count)
        plain, spent = await fit(thread, room), await fit(thread, room, spare)
        assert plain is not None
        assert spent is not None
        assert spent.head == plain.head
        before, after = forms(plain, count), forms(spent, count)
        assert sum(await used(thread, after)) <= room + spare
        pairs = enumerate(zip(before, after, strict=True))
        yield plain.head, before, after, next((i for i, (x, y) in pairs if x != y), None)


class TestStability:
    async def test_the_oldest_entries_never_change_once_the_thread_outgrows_its_room(
        self,
    ) -> None:
        for room in ROOMS:
            start = next(n for n in range(1, 2_000) if Thread(n).whole(0) * n > room)
            fits = [await fit(Thread(n), room) for n in range(start + 60, start + 300)]
            riches = {shaped.rich for shaped in fits if shaped is not None}
            assert len(riches) == 1, room  # the rich head: cards, from 2,500 tokens of room
            assert (riches.pop() != ()) == (room >= 2_500), room
            heads = [
                forms(shaped, shaped.head)
                for shaped in fits
                if shaped is not None and shaped.head > len(shaped.rich)
            ]
            assert heads, room
            assert all(head == heads[0] for head in heads), room

    async def test_ten_appends_keep_at_least_half_of_the_view(self) -> None:
        for room in ROOMS:
            seen = await views(room)
            windows = [kept(seen[i], seen[i + 10]) for i in range(len(seen) - 10)]
            assert min(windows) >= 0.5, (room, min(windows))

    async def test_most_appends_change_only_the_bottom(self) -> None:
        for room in ROOMS:
            seen = await views(room)
            ones = sorted(kept(seen[i], seen[i + 1]) for i in range(len(seen) - 1))
            assert ones[len(ones) // 2] >= 0.75, (room, ones[len(ones) // 2])
