"""The viewer in a real headless Chromium: lists, threads, nested squashes, remembered state,
permalinks, copying as Markdown, screenshots; no request ever leaves 127.0.0.1.

`FRS_SCREENSHOTS=docs` writes the README's screenshots there instead of the test's folder.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from frs.model import SessionId
from tests.web.browser import Offsite, browser, context
from tests.web.conftest import viewer
from tests.web.sample import HOSTILE, Sample, write_hostile, write_sample

pytestmark = pytest.mark.slow


@pytest.fixture
async def sample(tmp_path: Path) -> tuple[Path, Sample]:
    path = tmp_path / "frs.db"
    return path, await write_sample(path)


def is_open(page: Page, key: str) -> bool:
    return bool(page.locator(f'details[data-key="{key}"]').evaluate("d => d.open"))


@pytest.fixture
async def hostile(tmp_path: Path) -> tuple[Path, SessionId]:
    path = tmp_path / "frs.db"
    return path, await write_hostile(path)


class TestInTheBrowser:
    def test_sessions_thread_nested_squash_permalink_copy_and_screenshots(
        self, sample: tuple[Path, Sample], tmp_path: Path
    ) -> None:
        path, ids = sample
        shots = Path(os.environ.get("FRS_SCREENSHOTS") or tmp_path)
        offsite = Offsite()
        with viewer(path) as base, browser() as launched, context(launched, offsite) as ctx:
            page = ctx.new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.goto(base + "/")
            expect(page.locator("table.sessions tbody tr")).to_have_count(2)
            page.screenshot(path=tmp_path / "viewer-sessions.png")

            page.get_by_role("link", name="Parser work").click()
            expect(page.locator("h1")).to_have_text("Parser work")
            outer, inner = page.locator('[id="SQ.2"]'), page.locator('[id="SQ.1"]')
            expect(outer).to_contain_text("4 messages, ~29 → ~15 tokens")
            # Closed, the squash shows its summary and hides its originals.
            expect(page.locator('[id="M.1"]')).to_be_hidden()
            outer.locator("summary").first.click()
            expect(page.locator('[id="M.1"]')).to_be_visible()
            expect(page.locator('[id="M.3"]')).to_be_hidden()
            inner.locator("summary").first.click()
            expect(page.locator('[id="M.3"]')).to_contain_text("def tokenize(text)")
            page.screenshot(path=shots / "viewer-thread.png", full_page=True)
            inner.locator("summary").first.click()
            expect(page.locator('[id="M.3"]')).to_be_hidden()
            outer.locator("summary").first.click()
            expect(page.locator('[id="M.1"]')).to_be_hidden()

            # Expand all, then a reload: the state is remembered.
            page.click("#expand-all")
            page.reload()
            assert is_open(page, "SQ.2")
            assert is_open(page, "SQ.1")
            page.click("#collapse-all")
            page.reload()
            assert not is_open(page, "SQ.2")
            assert not is_open(page, "SQ.1")

            # A permalink to an original inside both squashes opens them and shows it.
            page.goto(f"{base}/s/{ids.session}#M.3")
            expect(page.locator('[id="M.3"]')).to_be_visible()
            expect(page.locator('[id="M.3"]')).to_have_class("entry tool original target")
            page.goto(f"{base}/s/{ids.session}/at/M.4")
            expect(page.locator('[id="M.4"]')).to_be_in_viewport()

            # Copy SQ.1 as Markdown, then a range, and read the clipboard back.
            inner.locator("button.copy").first.click()
            expect(inner.locator("button.copy").first).to_have_text("Copied")
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied.startswith("## [SQ.1] Summary of 3 messages (SQ.1@")
            assert "```text\nsrc/lex.py:12: def tokenize(text):\n```" in copied
            page.fill('#copy-range input[name="from"]', "2")
            page.fill('#copy-range input[name="to"]', "3")
            page.click("#copy-range button")
            expect(page.locator("#copy-range button")).to_have_text("Copied")
            copied = page.evaluate("navigator.clipboard.readText()")
            assert copied.startswith("## [2] User (M.5@")
            assert "## [3] Assistant (M.6@" in copied
            assert "[4]" not in copied

            page.goto(f"{base}/s/{ids.session}/audit")
            expect(page.locator("svg#chart polyline")).to_have_count(2)
            page.screenshot(path=shots / "viewer-audit.png")
        assert errors == []
        assert offsite.attempts == []
        for shot in (
            tmp_path / "viewer-sessions.png",
            shots / "viewer-thread.png",
            shots / "viewer-audit.png",
        ):
            assert shot.read_bytes().startswith(b"\x89PNG")

    def test_stored_markup_stays_text_and_reaches_nothing_outside(
        self, hostile: tuple[Path, SessionId]
    ) -> None:
        path, sid = hostile
        offsite = Offsite()
        with viewer(path) as base, browser() as launched, context(launched, offsite) as ctx:
            page = ctx.new_page()
            for url in ("/", f"/s/{sid}", f"/s/{sid}/audit", f"/s/{sid}/sq/1"):
                page.goto(base + url)
                if page.locator("#expand-all").count():
                    page.click("#expand-all")
                assert page.evaluate("window.pwned") is None
                assert page.locator("img, link[href*=example], svg:not(#chart)").count() == 0
                assert page.locator("textarea, iframe, [onerror], [onload]").count() == 0
            page.goto(f"{base}/s/{sid}")
            expect(page.locator('[id="M.1"] pre.body')).to_have_text(HOSTILE)
            assert offsite.attempts == []
            # The guard is live: a request that does leave is caught, aborted and recorded.
            with pytest.raises(PlaywrightError):
                page.goto("http://198.51.100.7/")
        assert offsite.attempts == ["http://198.51.100.7/"]

    def test_a_browser_logs_in_with_the_token_once(self, sample: tuple[Path, Sample]) -> None:
        path, _ = sample
        token = "t0ken-browser-0123456789"
        offsite = Offsite()
        with (
            viewer(path, "--token", token) as base,
            browser() as launched,
            context(launched, offsite) as ctx,
        ):
            page = ctx.new_page()
            page.goto(base + "/")
            expect(page).to_have_url(base + "/login")
            page.fill('input[name="token"]', "wrong")
            page.click('button[type="submit"]')
            expect(page.locator(".error")).to_contain_text("not a token this viewer accepts")
            page.fill('input[name="token"]', token)
            page.click('button[type="submit"]')
            expect(page.locator("table.sessions tbody tr")).to_have_count(2)
            # The cookie is out of scripts' reach.
            assert page.evaluate("document.cookie") == ""
        assert offsite.attempts == []
