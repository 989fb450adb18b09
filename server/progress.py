"""Progress of a long `frs-mcp import` or `export` on stderr (stdout carries the result)."""

from __future__ import annotations

import sys

BAR_WIDTH = 30


class Progress:
    """A bar on stderr when it is a terminal, else a line per quarter (`imported 600/2,400
    messages`) once the work reaches `quiet_below` units; below that, lines would be noise.

    `bar=False` keeps the bar off even on a terminal: an export printed to the same terminal
    would be cut by it.
    """

    def __init__(
        self, total: int, verb: str, unit: str, *, quiet_below: int, bar: bool = True
    ) -> None:
        self.total = total
        self.verb = verb
        self.unit = unit
        self.tty = bar and sys.stderr.isatty()
        self.lines = not self.tty and total >= quiet_below
        self.reported = 0

    def update(self, done: int) -> None:
        if self.tty and self.total:
            filled = BAR_WIDTH * done // self.total
            bar = "#" * filled + "." * (BAR_WIDTH - filled)
            print(f"\r[{bar}] {done:,}/{self.total:,} {self.unit}", end="", file=sys.stderr)
            if done == self.total:
                print(file=sys.stderr)
        elif self.lines and done * 4 >= (self.reported + 1) * self.total:
            self.reported = done * 4 // self.total
            print(f"{self.verb} {done:,}/{self.total:,} {self.unit}", file=sys.stderr)
