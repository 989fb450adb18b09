"""`frs-mcp web` over a real socket: the pages, their headers, tenants, refusals, and a
database left byte for byte as it was."""

from __future__ import annotations

import hashlib
import queue
import re
import socket
import sqlite3
import subprocess
import threading
import urllib.error
import urllib.request
from contextlib import closing
from pathlib import Path

import anyio
import httpx2
import pytest

from frs import Env, NewMessage, recording, sessions, squashes
from frs.model import LOCAL_TENANT, Limits
from server.web.command import viewer_app
from storage import MIGRATIONS, SqliteStore, open_database
from storage.readonly import open_readonly
from tests.command import frs_mcp
from tests.web.conftest import viewer, viewer_process
from tests.web.sample import Sample, write_sample
from tests.web.searching import FirstSearchWaits, drained, search_race

pytestmark = pytest.mark.slow

ANN = "ann-secret-0123456789"
LOCAL = "local-secret-0123456789"


def get(
    url: str, token: str | None = None, host: str | None = None
) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(url)
    if host:
        request.add_header("Host", host)
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read().decode()


@pytest.fixture
async def sample(tmp_path: Path) -> tuple[Path, Sample]:
    path = tmp_path / "frs.db"
    return path, await write_sample(path)


class TestPages:
    def test_browsing_every_page_leaves_the_database_byte_identical(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        with viewer(path) as base:
            for url in (
                "/",
                "/?q=zebra",
                f"/s/{ids.session}",
                f"/s/{ids.session}?before=3",
                f"/s/{ids.session}/audit",
                f"/s/{ids.session}/sq/2",
                f"/s/{ids.session}/md?sq=2",
                f"/s/{ids.session}/md?from=1&to=5",
                f"/s/{ids.session}/at/M.3",
                f"/s/{ids.other}",
            ):
                status, _, _ = get(base + url)
                assert status == 200, url
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
        # SQLite's WAL index may appear beside it (a reader needs one), but no page was
        # written: the write-ahead log, if SQLite made one, is empty.
        wal = path.with_name(path.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0

    def test_a_database_that_had_no_wal_or_shm_has_none_after_the_viewer_stops(
        self, sample: tuple[Path, Sample]
    ) -> None:
        """Reading a WAL-mode file made SQLite leave an empty -wal and a 32 KB -shm beside it,
        which a read-only connection cannot remove: the viewer has the engine remove them."""
        path, ids = sample
        assert sorted(p.name for p in path.parent.iterdir()) == ["frs.db"]
        before = path.read_bytes()
        with viewer(path) as base:
            for url in ("/", "/?q=zebra", f"/s/{ids.session}", f"/s/{ids.session}/audit"):
                assert get(base + url)[0] == 200, url
            assert path.with_name("frs.db-shm").exists(), "a reader needs its WAL index"
        assert sorted(p.name for p in path.parent.iterdir()) == ["frs.db"]
        assert path.read_bytes() == before

    async def test_a_server_that_opened_the_file_meanwhile_keeps_its_wal_and_shm(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, _ = sample
        async with open_readonly(path) as store:
            async with store.snapshot() as reader:
                assert await reader.count_sessions(LOCAL_TENANT) >= 1
            server = sqlite3.connect(path)  # started after the viewer, still running after it
            server.execute("select count(*) from sessions").fetchall()
        with closing(server):
            assert path.with_name("frs.db-wal").exists()
            assert path.with_name("frs.db-shm").exists()
            server.execute("create table later (id integer primary key)")
            server.execute("insert into later values (1)")
            server.commit()
            assert server.execute("select id from later").fetchall() == [(1,)]

    async def test_counts_agree_with_their_words_and_token_figures_say_tokens(
        self, tmp_path: Path
    ) -> None:
        """ "1 entries" once stood in the change log, and the sessions list's live/recorded
        column had no unit."""
        path = tmp_path / "frs.db"
        async with open_database(path) as db:
            env = Env(SqliteStore(db), Limits())
            sid = (await sessions.start(env, "One by one")).session.id
            await recording.record(env, [NewMessage("user", "first")], sid)
            await recording.record(env, [NewMessage("user", "second")], sid)
        with viewer(path) as base:
            _, _, trail = get(f"{base}/s/{sid}/audit")
            _, _, listed = get(base + "/")
            _, _, thread = get(f"{base}/s/{sid}")
        counted = re.findall(r" · ([\d,]+) (entry|entries), \S+ tokens live", trail)
        assert ("1", "entry") in counted, trail
        assert ("2", "entries") in counted, trail
        assert all((n == "1") == (word == "entry") for n, word in counted), counted
        assert "<th>Live / recorded tokens</th>" in listed
        assert re.search(r"live \S+ of \S+ recorded tokens", thread), thread[:3000]
        assert "Goal:" not in thread  # started without one

    def test_the_icon_is_named_by_every_page_and_favicon_ico_is_not_a_404(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        with viewer(path) as base:
            _, _, listed = get(base + "/")
            _, _, thread = get(f"{base}/s/{ids.session}")
            icon = get(base + "/static/favicon.svg")
            asked = get(base + "/favicon.ico")
        link = '<link rel="icon" type="image/svg+xml" href="/static/favicon.svg">'
        assert link in listed
        assert link in thread
        assert icon[0] == 200
        assert icon[1]["content-type"].startswith("image/svg+xml")
        assert icon[2].startswith("<svg ")
        assert asked[0] == 204

    def test_the_sessions_list_and_search_by_title_and_by_text(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, _ids = sample
        with viewer(path) as base:
            _, _, listed = get(base + "/")
            _, _, by_title = get(base + "/?q=parser")
            _, _, by_text = get(base + "/?q=zebra-striped")
            _, _, nothing = get(base + "/?q=absent%25")
        assert "Parser work" in listed
        assert "Release notes" in listed
        assert "cli · c-1" in listed
        assert "Parser work" in by_title
        assert "Release notes" not in by_title
        assert "Release notes" in by_text
        assert "Parser work" not in by_text
        assert "No session matches." in nothing

    async def test_a_search_past_its_time_bound_is_stopped_with_a_page_that_says_so(
        self, sample: tuple[Path, Sample]
    ) -> None:
        """A search reads on a connection of its own and SQLite interrupts it at
        `--search-seconds` (2 s by default): a 200-character search over megabytes once held
        the only reader for seconds while every other page waited."""
        path, _ = sample
        async with open_database(path) as db:
            env = Env(SqliteStore(db), Limits())
            await sessions.start(env, "Long one")
            said = [NewMessage("user", f"{n} " + "lorem ipsum " * 200) for n in range(2000)]
            await recording.record(env, said)
        query = "/?q=" + "a%20phrase%20found%20nowhere%20" * 8
        with viewer(path, "--search-seconds", "0.000001") as base:
            stopped = await anyio.to_thread.run_sync(get, base + query)
            listed = await anyio.to_thread.run_sync(get, base + "/")
        with viewer(path) as base:
            found = await anyio.to_thread.run_sync(get, base + "/?q=1999%20lorem")
        assert stopped[0] == 400
        assert "took longer than 1e-06 s and was stopped" in stopped[2]
        assert "Search for a longer or rarer phrase" in stopped[2]
        assert listed[0] == 200
        assert "Long one" in listed[2]
        assert found[0] == 200
        assert "Long one" in found[2]

    async def test_a_page_holding_a_huge_squash_is_bounded_and_says_where_the_rest_is(
        self, huge_db: tuple[Path, str, str]
    ) -> None:
        """One squash of 20 MB once made its thread's page 20 MB: a page shows a text's head
        and tail (the alias reads the whole), and opens originals up to a budget (the squash's
        own page has the rest, from the first left out)."""
        path, huge, _ = huge_db
        with viewer(path) as base:
            status, _, page = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}")
        assert status == 200
        assert len(page.encode()) < 2_000_000
        assert "HEAD-MARK" in page
        assert "TAIL-MARK" in page
        assert "[… 19,900,020 characters left out …]" in page
        assert "read the whole with get_alias M.1@" in page
        assert f"… {LEFT_OUT:,} characters (31 more originals) left out; the full text: " in page
        assert f'href="/s/{huge}/sq/1?from=11"' in page
        assert "or get_alias SQ.1@" in page

    def test_pages_are_never_cached_and_the_static_files_may_be(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        with viewer(path) as base:
            pages = [get(base + p) for p in ("/", f"/s/{ids.session}", "/?q=parser", "/s/x")]
            static = get(base + "/static/viewer.css")
        assert [(status, headers.get("cache-control")) for status, headers, _ in pages] == [
            (200, "no-store"),
            (200, "no-store"),
            (200, "no-store"),
            (404, "no-store"),
        ]
        assert static[0] == 200
        assert static[1].get("cache-control") != "no-store"

    def test_a_thread_shows_the_models_numbering_and_nested_squashes_with_their_sizes(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        with viewer(path) as base:
            status, headers, page = get(f"{base}/s/{ids.session}")
        assert status == 200
        csp = headers["content-security-policy"]
        assert "default-src 'none'" in csp
        assert "script-src 'self'" in csp
        assert "unsafe-inline" not in csp
        # SQ.2 at position 1 holds M.1 and SQ.1, which holds M.2-M.4.
        assert page.index('id="SQ.2"') < page.index('id="M.1"') < page.index('id="SQ.1"')
        assert page.index('id="SQ.1"') < page.index('id="M.4"') < page.index('id="M.5"')
        assert '<a href="#SQ.2" class="label">[1]</a>' in page
        assert '<a href="#M.5" class="label">[2]</a>' in page
        assert "4 messages, ~29 → ~15 tokens" in page
        assert "[tool_use:bash, command:grep -n tokenize src/]" in page
        assert "Plan: ✓ read the code · ▶ fix it" in page
        assert "▸ focus 1: write the regression test" in page
        assert "— checkpoint &quot;cause found&quot; · revision 5" in page
        # A long message is a card first, as the model sees it, and whole a click away.
        assert "log line 0\nlog line 1\nlog line 2\n… 295 lines …\nlog line 298" in page
        assert "<summary>all 3,790 characters</summary>" in page
        assert "log line 150\n" in page

    def test_the_audit_trail_lists_squashes_restores_and_charts_the_tokens(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        with viewer(path) as base:
            _, _, page = get(f"{base}/s/{ids.session}/audit")
        assert "squashed positions 2–4 into SQ.1" in page
        assert '<li value="8" class="restored">' in page
        assert page.count("<polyline") == 2
        assert '<tr class="restored">' in page

    def test_markdown_of_a_squash_holds_its_originals_in_fences_that_cannot_break(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        with viewer(path) as base:
            status, headers, text = get(f"{base}/s/{ids.session}/md?sq=2")
        assert status == 200
        assert headers["content-type"].startswith("text/markdown")
        assert text.startswith("## [SQ.2] Summary of 4 messages (SQ.2@")
        assert "#### [M.1] User (M.1@" in text
        assert "#### [SQ.1] Summary of 3 messages" in text
        assert "```text\nThe loop stops one short: range(len(t) - 1).\n```" in text

    def test_a_permalink_leads_to_the_page_that_holds_it(self, sample: tuple[Path, Sample]) -> None:
        path, ids = sample
        with viewer(path) as base:
            status, _, page = get(f"{base}/s/{ids.session}/at/M.3")
            bad, _, why = get(f"{base}/s/{ids.session}/at/X.3")
        assert status == 200
        assert 'id="M.3"' in page
        assert bad == 400
        assert "use M.7 or SQ.2" in why


#: The characters of the originals a page of the huge squash leaves out: the 31 after the
#: 20 MB one and nine of 99,002 characters (a page opens 1,000,000, each text at most 100,000).
LEFT_OUT = sum(len(f"{n} ") + 99_000 for n in range(9, 40))


async def write_huge(path: Path) -> tuple[str, str]:
    """Two sessions: "Huge", one squash of 20 MB (a text of 20,000,020 characters and forty of
    99,002), and "Wide", fifteen entries of 150,000 characters each."""
    async with open_database(path) as db:
        # A server run with a higher --max-message-chars recorded it.
        env = Env(SqliteStore(db), Limits(max_message_chars=20_000_100))
        huge = (await sessions.start(env, "Huge")).session.id
        text = "HEAD-MARK " + "x" * 20_000_000 + " TAIL-MARK"
        await recording.record(env, [NewMessage("user", text)])
        await recording.record(env, [NewMessage("user", f"{n} " + "y" * 99_000) for n in range(40)])
        await squashes.compress_range(env, 1, 41, "Twenty megabytes and forty pages.")
        wide = (await sessions.start(env, "Wide")).session.id
        await recording.record(
            env, [NewMessage("user", f"W{n:02} " + "w" * 149_996) for n in range(15)]
        )
    return huge, wide


@pytest.fixture(scope="module")
def huge_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    """`write_huge`'s database, written once for the tests that only read it."""
    path = tmp_path_factory.mktemp("huge") / "frs.db"
    huge, wide = anyio.run(write_huge, path)
    return path, huge, wide


class TestHugeSquashes:
    """The squash's own page and the Markdown export are bounded as the thread page is (issue
    23): 20 MB of originals once made each of them 20 MB."""

    async def test_the_squash_page_opens_a_page_of_originals_and_links_the_next(
        self, huge_db: tuple[Path, str, str]
    ) -> None:
        path, huge, _ = huge_db
        with viewer(path) as base:
            first = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/sq/1")
            second = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/sq/1?from=11")
            past = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/sq/1?from=42")
        assert first[0] == 200
        assert len(first[2].encode()) < 2_000_000
        assert "HEAD-MARK" in first[2]
        assert "TAIL-MARK" in first[2]
        assert "[… 19,900,020 characters left out …]" in first[2]
        assert (
            f"… {LEFT_OUT:,} characters (31 more originals) left out; the full text: " in (first[2])
        )
        assert f'href="/s/{huge}/sq/1?from=11"' in first[2]
        assert 'id="M.11"' not in first[2]
        # The next page starts where the first stopped, and says where the first ones are.
        assert second[0] == 200
        assert len(second[2].encode()) < 2_000_000
        assert "Originals from number 11 on" in second[2]
        assert 'id="M.11"' in second[2]
        assert "HEAD-MARK" not in second[2]
        assert f'href="/s/{huge}/sq/1?from=21"' in second[2]
        assert past[0] == 400
        assert "from=42: SQ.1 replaced 41 entries; give 1 to 41." in past[2]

    async def test_markdown_of_a_huge_squash_or_range_is_bounded_and_names_the_rest(
        self, huge_db: tuple[Path, str, str]
    ) -> None:
        path, huge, wide = huge_db
        with viewer(path) as base:
            squash = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/md?sq=1")
            entry = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/md?from=1&to=1")
            rest = await anyio.to_thread.run_sync(get, f"{base}/s/{huge}/md?sq=1&from=11")
            entries = await anyio.to_thread.run_sync(get, f"{base}/s/{wide}/md?from=1&to=15")
        for status, _, text in (squash, entry, rest, entries):
            assert status == 200
            assert len(text.encode()) < 2_000_000
        for text in (squash[2], entry[2]):
            assert "HEAD-MARK" in text
            assert "TAIL-MARK" in text
            assert "… 19,900,020 characters left out; the full text: get_alias M.1@" in text
            assert (
                f"… {LEFT_OUT:,} characters (31 more originals) left out; the full text: "
                f"{base}/s/{huge}/md?sq=1&from=11, or get_alias SQ.1@"
            ) in text
        assert "### Originals from number 11" in rest[2]
        assert "(M.11@" in rest[2]
        assert "HEAD-MARK" not in rest[2]
        # Fifteen entries of 150,000 characters: ten texts' 100,000 fill the answer.
        assert entries[2].count("… 50,000 characters left out; the full text: get_alias M.") == 10
        assert "W09 " in entries[2]
        assert "W10 " not in entries[2]
        left = 5 * 150_000
        assert (
            f"… {left:,} characters left out (positions 11–15); the full text: "
            f"{base}/s/{wide}/md?from=11&to=15"
        ) in entries[2]


class TestRefusals:
    def test_bad_input_gets_a_page_that_says_what_to_do(self, sample: tuple[Path, Sample]) -> None:
        path, ids = sample
        with viewer(path) as base:
            unknown = get(f"{base}/s/nope")
            before = get(f"{base}/s/{ids.session}?before=-3")
            squash = get(f"{base}/s/{ids.session}/sq/99")
            wide = get(f"{base}/s/{ids.session}/md?from=5&to=2")
            huge = get(f"{base}/s/{ids.session}/sq/{2**63}")
            arabic = get(f"{base}/s/{ids.session}?before=%D9%A3")  # ARABIC-INDIC DIGIT THREE
        assert unknown[0] == 404
        assert "does not exist, or is not yours" in unknown[2]
        assert before[0] == 400
        assert "give a whole number of at least 1" in before[2]
        assert squash[0] == 404
        assert "No squash SQ.99" in squash[2]
        assert wide[0] == 400
        assert "give from ≤ to" in wide[2]
        assert huge[0] == 404  # no integer column holds it: as absent as SQ.99
        assert f"No squash SQ.{2**63}" in huge[2]
        assert arabic[0] == 400
        assert "give a whole number of at least 1" in arabic[2]
        assert "content-security-policy" in unknown[1]

    def test_a_database_it_cannot_read_as_it_is_is_refused_with_what_to_do(
        self, tmp_path: Path
    ) -> None:
        missing = frs_mcp("web", "--db", str(tmp_path / "none.db"), "--port", "0")
        blank = tmp_path / "blank.db"
        sqlite3.connect(blank).close()
        newer = tmp_path / "newer.db"
        with sqlite3.connect(newer) as conn:
            conn.execute("pragma user_version = 99")
        never = frs_mcp("web", "--db", str(blank), "--port", "0")
        future = frs_mcp("web", "--db", str(newer), "--port", "0")
        assert missing.returncode == 2
        assert "no database at" in missing.stderr
        assert not (tmp_path / "none.db").exists()
        assert never.returncode == 2
        assert "holds no frs-mcp data yet (schema version 0)" in never.stderr
        assert "frs-mcp --db" in never.stderr
        assert future.returncode == 2
        assert "schema version 99" in future.stderr
        assert "Traceback" not in never.stderr + future.stderr + missing.stderr

    def test_another_applications_database_is_refused(self, tmp_path: Path) -> None:
        foreign = tmp_path / "other.db"
        with closing(sqlite3.connect(foreign)) as conn:
            conn.execute("create table notes (id integer primary key)")
            conn.execute("pragma user_version = 3")
            conn.commit()
        run = frs_mcp("web", "--db", str(foreign), "--port", "0")
        assert run.returncode == 2
        assert "is not an frs-mcp database: it holds other tables (notes)" in run.stderr

    def test_the_viewer_does_not_advise_starting_the_server_on_a_file_the_server_refuses(
        self, tmp_path: Path
    ) -> None:
        # Another application's unversioned file: the viewer used to advise "Start the server on
        # it once (frs-mcp --db …)", which then answered "is not an frs-mcp database".
        foreign = tmp_path / "other.db"
        with closing(sqlite3.connect(foreign)) as conn:
            conn.execute("create table notes (id integer primary key)")
            conn.commit()
        viewer = frs_mcp("web", "--db", str(foreign), "--port", "0")
        served = frs_mcp("--db", str(foreign), "export", "latest")
        chat = tmp_path / "chat.jsonl"
        chat.write_text('{"role": "user", "content": "hi"}\n', encoding="utf-8")
        imported = frs_mcp("--db", str(foreign), "import", str(chat))
        assert viewer.returncode == served.returncode == imported.returncode == 2
        for run in (viewer, served, imported):
            assert "is not an frs-mcp database: it holds other tables (notes)" in run.stderr
            assert "Traceback" not in run.stderr
        assert "Start the server" not in viewer.stderr
        assert "frs-mcp --db" not in viewer.stderr

    def test_another_applications_stamped_database_is_refused(self, tmp_path: Path) -> None:
        # Stamped as its own (a GeoPackage), with tables named like ours: the stamp decides.
        foreign = tmp_path / "map.gpkg"
        with closing(sqlite3.connect(foreign)) as conn:
            conn.execute("pragma application_id = 1196444487")
            for table in ("sessions", "messages", "changes"):
                conn.execute(f"create table {table} (id integer primary key)")
            conn.execute(f"pragma user_version = {len(MIGRATIONS)}")
            conn.commit()
        run = frs_mcp("web", "--db", str(foreign), "--port", "0")
        assert run.returncode == 2
        assert "is not an frs-mcp database: its application_id is 0x47504b47" in run.stderr

    @pytest.mark.parametrize("version", [0, 3, 99])
    def test_a_refused_wal_mode_file_is_left_byte_for_byte_with_nothing_beside_it(
        self, tmp_path: Path, version: int
    ) -> None:
        """Any connection to a WAL-mode file, a read-only one too, creates its -wal and -shm;
        a file the viewer refuses is checked without one."""
        foreign = tmp_path / "other.db"
        with closing(sqlite3.connect(foreign)) as conn:
            conn.execute("pragma journal_mode = wal")
            conn.execute("create table notes (id integer primary key)")
            conn.execute(f"pragma user_version = {version}")
            conn.commit()
        before = foreign.read_bytes()
        assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
        run = frs_mcp("web", "--db", str(foreign), "--port", "0")
        assert run.returncode == 2, run.stderr
        assert "Traceback" not in run.stderr
        assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
        assert foreign.read_bytes() == before

    async def test_idle_sockets_at_the_cap_are_closed_to_let_a_browser_in(
        self, sample: tuple[Path, Sample]
    ) -> None:
        """The transports' socket limits hold here too: at 256 open sockets the oldest that
        sent nothing is closed (503) for the newcomer, instead of idle sockets piling up until
        the process runs out of files."""
        path, _ = sample
        with viewer(path) as base:
            port = int(base.rsplit(":", 1)[1])
            idle = [await anyio.connect_tcp("127.0.0.1", port) for _ in range(257)]
            try:
                got = b""
                with anyio.fail_after(30):
                    while b"\r\n" not in got:
                        got += await idle[0].receive()
                page = await anyio.to_thread.run_sync(get, base + "/")
            finally:
                for sock in idle:
                    await sock.aclose()
        assert got.startswith(b"HTTP/1.1 503 "), got
        assert page[0] == 200

    async def test_a_client_that_never_reads_a_large_page_is_closed_and_others_are_served(
        self, sample: tuple[Path, Sample]
    ) -> None:
        """A client that asks for megabytes and reads none of them once held its socket and the
        answer in memory for ever (10 exports never read: 74 to 387 MiB). With writing paused
        and nothing read for `--write-timeout` seconds, the socket is aborted."""
        path, _ = sample
        async with open_database(path) as db:
            env = Env(SqliteStore(db), Limits())
            big = (await sessions.start(env, "Big one")).session.id
            await recording.record(
                env, [NewMessage("user", f"{n} " + "x" * 100_000) for n in range(200)]
            )
        with viewer_process(path, "--write-timeout", "0.5") as (base, process):
            port = int(base.rsplit(":", 1)[1])
            stalled = socket.socket()
            stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            stalled.connect(("127.0.0.1", port))
            with closing(stalled):
                host = f"127.0.0.1:{port}".encode()
                stalled.sendall(
                    b"GET /s/" + big.encode() + b" HTTP/1.1\r\nHost: " + host + b"\r\n\r\n"
                )
                meanwhile = await anyio.to_thread.run_sync(get, base + "/")
                logged = await anyio.to_thread.run_sync(_logged, process, "--write-timeout")
                received = await anyio.to_thread.run_sync(drained, stalled)
        assert meanwhile[0] == 200
        assert "read nothing of the answer for 0.5 s (--write-timeout)" in logged
        assert received.startswith(b"HTTP/1.1 200 ")
        assert len(received) < 200 * 100_000  # cut short: the server closed it

    def test_another_address_without_a_token_is_refused(self, tmp_path: Path) -> None:
        run = frs_mcp("web", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0", "--port", "0")
        assert run.returncode == 2
        assert "without a token" in run.stderr

    def test_a_foreign_host_header_is_refused(self, sample: tuple[Path, Sample]) -> None:
        path, _ = sample
        with viewer(path) as base:
            status, _, text = get(base + "/", host="evil.example")
        assert status == 421
        assert "DNS rebinding" in text


def _logged(process: subprocess.Popen[str], needle: str) -> str:
    """The first line of the viewer's log holding `needle`, or "" if none comes within 30 s
    (a bound for a broken server, not a wait: the line comes within the write timeout)."""
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.put(line)

    threading.Thread(target=read, daemon=True).start()
    try:
        while needle not in (line := lines.get(timeout=30)):
            pass
    except queue.Empty:
        return ""
    return line


class _Stay(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # show the redirect itself


def send(
    url: str, data: bytes | None = None, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], str]:
    """One request, redirects not followed."""
    request = urllib.request.Request(url, data=data, headers=headers or {})
    opener = urllib.request.build_opener(_Stay)
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, dict(error.headers), error.read().decode()


class TestTenants:
    def test_a_tenant_sees_only_its_own_sessions(
        self, tmp_path: Path, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        tokens = tmp_path / "tokens"
        tokens.write_text(f"ann {ANN}\n")
        tokens.chmod(0o600)
        with viewer(path, "--tokens", str(tokens), "--token", LOCAL) as base:
            wrong = get(base + "/", "w" * 20)
            ann = get(base + "/", ANN)
            ann_thread = get(f"{base}/s/{ids.session}", ANN)
            local = get(base + "/", LOCAL)
        assert wrong[0] == 401
        # The sample's sessions are the local tenant's: ann has none, and cannot open one.
        assert ann[0] == 200
        assert "No session yet." in ann[2]
        assert "Parser work" not in ann[2]
        assert ann_thread[0] == 404
        assert "Parser work" not in ann_thread[2]
        assert "Parser work" in local[2]

    def test_a_browser_gives_the_token_once_and_gets_a_session_cookie_not_the_token(
        self, tmp_path: Path, sample: tuple[Path, Sample]
    ) -> None:
        path, _ = sample
        token = LOCAL
        with viewer(path, "--token", token) as base:
            asked = send(base + "/")
            form = send(base + "/login")
            refused = send(base + "/login", b"token=nope")
            login = send(base + "/login", b"token=" + token.encode())
            cookie = login[1]["set-cookie"].split(";", 1)[0]
            inside = send(base + "/", headers={"Cookie": cookie})
            forged = send(base + "/", headers={"Cookie": "frs_viewer_session=" + token})
            over_tls = send(
                base + "/login", b"token=" + token.encode(), {"X-Forwarded-Proto": "https"}
            )
            out = send(base + "/logout", b"", headers={"Cookie": cookie})
            after = send(base + "/", headers={"Cookie": cookie})
        assert asked[0] == 303
        assert asked[1]["location"] == "/login"
        assert form[0] == 200
        assert 'type="password" name="token"' in form[2]
        assert "only this server reads" not in form[2]
        assert "random session cookie" in form[2]
        assert refused[0] == 401
        assert "not a token this viewer accepts" in refused[2]
        assert login[0] == 303
        attributes = login[1]["set-cookie"]
        assert token not in attributes  # the cookie is a random session id, not the secret
        assert cookie.startswith("frs_viewer_session=")
        assert len(cookie.split("=", 1)[1]) >= 40
        assert "HttpOnly" in attributes
        assert "SameSite=Strict" in attributes
        assert "Max-Age=43200" in attributes
        assert "Secure" not in attributes  # plain http: a Secure cookie would never come back
        assert "; Secure" in over_tls[1]["set-cookie"]
        assert inside[0] == 200
        assert "Parser work" in inside[2]
        assert "Log out" in inside[2]
        assert forged[0] == 303  # the token itself is no cookie: sent to the login form
        assert out[0] == 303
        assert out[1]["location"] == "/login"
        assert "Max-Age=0" in out[1]["set-cookie"]
        assert after[0] == 303  # the session ended on the server, not only in the browser
        assert after[1]["location"] == "/login"

    def test_guessing_the_token_is_throttled_per_address(self, sample: tuple[Path, Sample]) -> None:
        """Ten wrong tokens, then every try, the right token too, waits: 429 and Retry-After
        (one more try each 30 s), at the form and in the `Authorization` header alike, so
        guessing goes at two tries a minute, not a thousand a second."""
        path, _ = sample
        with viewer(path, "--token", LOCAL) as base:
            wrong = [send(base + "/login", f"token=guess-{n}".encode())[0] for n in range(10)]
            right = send(base + "/login", b"token=" + LOCAL.encode())
            header = get(base + "/", LOCAL)
        assert wrong == [401] * 10
        assert right[0] == 429
        assert 1 <= int(right[1]["retry-after"]) <= 30
        assert "Too many wrong tokens" in right[2]
        assert "set-cookie" not in {k.lower() for k in right[1]}
        assert header[0] == 429  # the header is no way around it
        assert "Too many wrong tokens" in header[2]


class TestOneSearchAtATime:
    async def test_a_tenants_second_search_meanwhile_gets_429_and_another_tenant_searches(
        self, sample: tuple[Path, Sample]
    ) -> None:
        """A tenant runs one search at a time (a search may take `--search-seconds`): a
        second one meanwhile is refused with 429 saying to wait, another tenant's goes on,
        and once the first is answered the tenant searches again."""
        path, _ = sample
        tenants = {ANN: "ann", LOCAL: LOCAL_TENANT}
        async with open_readonly(path) as real:
            store = FirstSearchWaits(real)
            app = viewer_app(store, "127.0.0.1", 8766, tenants, ())
            transport = httpx2.ASGITransport(app=app)
            async with httpx2.AsyncClient(
                transport=transport, base_url="http://127.0.0.1:8766"
            ) as http:
                race = await search_race(http, "/", store, LOCAL, ANN)
        assert race.second.status_code == 429
        assert "A search of yours is still running" in race.second.text
        assert race.other.status_code == 200
        assert race.first.status_code == 200
        assert "Parser work" in race.first.text
        assert race.again.status_code == 200


class TestBesideAWriter:
    async def test_it_reads_what_a_server_writing_beside_it_commits(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, ids = sample
        async with open_database(path) as db:
            env = Env(SqliteStore(db), Limits())
            with viewer(path) as base:
                before = await anyio.to_thread.run_sync(get, f"{base}/s/{ids.session}")
                await recording.record(
                    env, [NewMessage("assistant", "Written while the viewer ran.")], ids.session
                )
                after = await anyio.to_thread.run_sync(get, f"{base}/s/{ids.session}")
        assert "Written while the viewer ran." not in before[2]
        assert "Written while the viewer ran." in after[2]

    def test_a_database_failing_under_a_page_gets_a_page_that_says_so(
        self, sample: tuple[Path, Sample]
    ) -> None:
        path, _ = sample
        with viewer(path) as base:
            with closing(sqlite3.connect(path)) as conn:  # another program breaks the schema
                conn.execute("alter table sessions rename to gone")
                conn.commit()
            status, headers, page = get(base + "/")
        assert status == 503
        assert "The database could not be read: no such table: sessions" in page
        assert "Traceback" not in page
        assert "content-security-policy" in headers

    def test_a_schema_it_would_have_to_migrate_is_refused_and_left_alone(
        self, tmp_path: Path
    ) -> None:
        older = tmp_path / "older.db"
        with closing(sqlite3.connect(older)) as conn:
            for statements in MIGRATIONS[:-1]:
                for sql in statements:
                    conn.execute(sql)
            conn.execute(f"pragma user_version = {len(MIGRATIONS) - 1}")
            conn.commit()
        before = hashlib.sha256(older.read_bytes()).hexdigest()
        run = frs_mcp("web", "--db", str(older), "--port", "0")
        assert run.returncode == 2
        assert f"has schema version {len(MIGRATIONS) - 1}" in run.stderr
        assert "start the server on it once" in run.stderr
        assert hashlib.sha256(older.read_bytes()).hexdigest() == before
