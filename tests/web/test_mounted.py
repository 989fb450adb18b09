"""The viewer inside the HTTP transports, at `/ui`, behind their Host check and token."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest

from tests.clients.frs_process import TOKEN, frs_http, server_env
from tests.web.sample import write_sample
from tests.web.test_viewer import get

pytestmark = pytest.mark.slow


async def test_the_viewer_is_served_at_ui_under_the_same_token(tmp_path: Path) -> None:
    db = tmp_path / "frs.db"
    ids = await write_sample(db)
    env = server_env(FRS_TOKEN=TOKEN)
    with frs_http(db, "--transport", "streamable-http", env=env) as server:
        announced = server.urls.get("web viewer")
        anonymous = get(server.base + "/ui/")
        listed = get(server.base + "/ui/", TOKEN)
        thread = get(f"{server.base}/ui/s/{ids.session}", TOKEN)
        script = get(server.base + "/ui/static/viewer.js", TOKEN)
        foreign = get(server.base + "/ui/", TOKEN, host="evil.example")
    assert announced == server.base + "/ui/"
    assert anonymous[0] == 401
    assert listed[0] == 200
    assert f'href="/ui/s/{ids.session}"' in listed[2]
    assert "default-src 'none'" in listed[1]["content-security-policy"]
    assert thread[0] == 200
    assert 'href="/ui/static/viewer.css"' in thread[2]
    assert f'data-md="/ui/s/{ids.session}/md?sq=2"' in thread[2]
    assert script[0] == 200
    assert foreign[0] == 421


async def test_the_viewers_own_refusals_keep_their_words_under_ui(tmp_path: Path) -> None:
    # The HTTP transports reword the SDK's 503 (the session limit); a page of the viewer that
    # answers 503 because the database failed must still say so.
    db = tmp_path / "frs.db"
    await write_sample(db)
    with frs_http(db, "--transport", "streamable-http", env=server_env(FRS_TOKEN=TOKEN)) as s:
        with closing(sqlite3.connect(db)) as conn:  # another program breaks the schema
            conn.execute("alter table sessions rename to gone")
            conn.commit()
        status, _, page = get(s.base + "/ui/", TOKEN)
    assert status == 503
    assert "The database could not be read: no such table: sessions" in page
    assert "Streamable HTTP sessions" not in page
