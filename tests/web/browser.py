"""Headless Chromium for the viewer's browser tests, through Playwright for Python.

Playwright's own browser download is not used (it is not reachable from every machine): the
tests drive the system's Chromium (`executable_path`), which `scripts/preflight` installs as
root when it is missing (Debian's `chromium` package). `FRS_CHROMIUM` names another binary.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from playwright.sync_api import Browser, BrowserContext, Route, sync_playwright

INSTALL = "sudo apt-get install chromium (Debian/Ubuntu), or set FRS_CHROMIUM=/path/to/chromium"
NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def chromium_path() -> str:
    """The Chromium to drive; fails, saying how to install one, when there is none."""
    given = os.environ.get("FRS_CHROMIUM")
    if given:
        assert shutil.which(given), f"FRS_CHROMIUM={given} is not an executable: {INSTALL}"
        return given
    found = next((shutil.which(name) for name in NAMES if shutil.which(name)), None)
    assert found, f"no Chromium found ({', '.join(NAMES)}); install one: {INSTALL}"
    return found


@dataclass
class Offsite:
    """Every request the pages tried to make to anything but 127.0.0.1, aborted."""

    attempts: list[str] = field(default_factory=list)

    def handle(self, route: Route) -> None:
        url = route.request.url
        if urlsplit(url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.attempts.append(url)
            route.abort()


@contextmanager
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True)
        try:
            yield launched
        finally:
            launched.close()


@contextmanager
def context(launched: Browser, offsite: Offsite) -> Iterator[BrowserContext]:
    """A context that may use the clipboard, whose every request goes through `offsite`."""
    made = launched.new_context(
        permissions=["clipboard-read", "clipboard-write"],
        viewport={"width": 1100, "height": 760},
    )
    made.route("**/*", offsite.handle)
    try:
        yield made
    finally:
        made.close()
