"""Context sources (issue 4): `frs_source` add/list/verify/remove, drift, and every refusal.

Files are read only under the roots the operator allowed (`allow_roots`, the `--allow-root`
flag); each refusal is a tool error that says what was wrong and changes nothing: the same
revision, the same sources, the same view.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.calls import call_text, refused, revision, sha8
from tests.conftest import Connect

SOURCE_LINE = re.compile(
    r"^(?P<alias>[A-Z][A-Z0-9]*\.[A-Za-z0-9_-]+)@(?P<sha8>[0-9a-f]{8}) (?P<where>.+?) · "
    r"(?P<lines>[\d,]+) lines?(?: · changed: now @(?P<now>[0-9a-f]{8}))?$"
)
MAIN_PY = "".join(f"def handler_{i}(request):\n    return {i}\n" for i in range(60))  # 120 lines


async def add(client: Client, **arguments: Any) -> str:
    return await call_text(client, "frs_source", action="add", **arguments)


async def state(client: Client) -> tuple[int, str, str]:
    """Everything a refused call must leave as it was: revision, sources, the view."""
    listed = await call_text(client, "frs_source", action="list")
    shown = await call_text(client, "frs_view_thread", show_sources=True)
    return await revision(client), listed, shown


def page_text(page: str) -> str:
    """A get_alias page without its heading (one page: no next-call line)."""
    return page.split("\n", 1)[1]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """An allowed root holding handlers/main.py (120 lines)."""
    folder = tmp_path / "project"
    (folder / "handlers").mkdir(parents=True)
    (folder / "handlers" / "main.py").write_text(MAIN_PY)
    return folder


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside every allowed root."""
    secret = tmp_path / "elsewhere" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text("TOP SECRET: the outside file\n")
    return secret


class TestInlineText:
    async def test_inline_text_is_registered_under_its_alias_and_read_back_whole(
        self, connect: Connect
    ) -> None:
        text = "# Decision\nWe keep SQLite.\nPostgreSQL when several hosts share one thread.\n"
        async with connect() as client:
            await call_text(client, "frs_session", action="start", title="Decisions")
            before = await revision(client)
            answer = await add(client, alias="A.storage", text=text)
            after = await revision(client)
            page = await call_text(client, "get_alias", alias="A.storage")
            pinned = await call_text(client, "get_alias", alias=f"A.storage@{sha8(text)}")
        assert answer.startswith(f"Registered A.storage@{sha8(text)} inline text · 3 lines")
        assert f"revision {after}" in answer
        assert after == before + 1
        assert page.split("\n", 1)[0].startswith(f"A.storage@{sha8(text)} · inline text")
        assert page_text(page) == text
        assert page_text(pinned) == text

    async def test_a_user_prefix_outside_the_seed_families_is_accepted(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            answer = await add(client, alias="RUNBOOK.deploy", text="1. build\n2. ship\n")
        assert answer.startswith("Registered RUNBOOK.deploy@")


class TestFiles:
    async def test_a_file_gets_an_alias_derived_from_its_name(
        self, connect: Connect, root: Path
    ) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            answer = await add(client, path="handlers/main.py")
            page = await call_text(client, "get_alias", alias="H.main")
        assert answer.startswith(f"Registered H.main@{sha8(MAIN_PY)} handlers/main.py · 120 lines")
        assert page_text(page) == MAIN_PY

    @pytest.mark.parametrize(
        ("name", "alias"),
        [
            ("README.md", "D.README"),
            ("test_api.py", "T.test_api"),
            ("schema.sql", "S.schema"),
            ("config.yaml", "PR.config"),
            ("user-service.ts", "H.user-service"),
        ],
    )
    async def test_the_family_is_guessed_from_the_file_name(
        self, connect: Connect, root: Path, name: str, alias: str
    ) -> None:
        (root / name).write_text("content\n")
        async with connect(allow_roots=(str(root),)) as client:
            answer = await add(client, path=name)
        assert answer.startswith(f"Registered {alias}@")

    async def test_a_bare_prefix_takes_the_name_from_the_file(
        self, connect: Connect, root: Path
    ) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            answer = await add(client, alias="S", path="handlers/main.py")
        assert answer.startswith("Registered S.main@")

    async def test_a_full_alias_is_used_as_given_and_an_absolute_path_works(
        self, connect: Connect, root: Path
    ) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            answer = await add(client, alias="H.entry", path=str(root / "handlers" / "main.py"))
        assert answer.startswith("Registered H.entry@")
        assert " handlers/main.py · " in answer

    async def test_a_symlink_that_stays_inside_the_root_is_followed(
        self, connect: Connect, root: Path
    ) -> None:
        (root / "current.py").symlink_to(root / "handlers" / "main.py")
        async with connect(allow_roots=(str(root),)) as client:
            answer = await add(client, alias="H.current", path="current.py")
            page = await call_text(client, "get_alias", alias="H.current")
        assert answer.startswith(f"Registered H.current@{sha8(MAIN_PY)} handlers/main.py")
        assert page_text(page) == MAIN_PY

    async def test_list_shows_one_line_per_source(self, connect: Connect, root: Path) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            await add(client, alias="D.notes", text="one line")
            listed = await call_text(client, "frs_source", action="list")
        assert listed.split("\n") == [
            f"D.notes@{sha8('one line')} inline text · 1 line",
            f"H.main@{sha8(MAIN_PY)} handlers/main.py · 120 lines",
        ]

    async def test_list_of_no_sources_says_how_to_add_one(self, connect: Connect) -> None:
        async with connect() as client:
            listed = await call_text(client, "frs_source", action="list")
        assert "No sources" in listed
        assert "frs_source(action='add'" in listed


class TestDrift:
    async def test_verify_lists_the_changed_file_with_its_old_and_new_sha8(
        self, connect: Connect, root: Path
    ) -> None:
        main = root / "handlers" / "main.py"
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            await add(client, alias="D.notes", text="inline never drifts")
            (root / "other.py").write_text("x = 1\n")
            await add(client, path="other.py")
            clean = await call_text(client, "frs_source", action="verify")
            main.write_text(MAIN_PY + "def added():\n    pass\n")
            changed = await call_text(client, "frs_source", action="verify")
        new = sha8(main.read_text())
        assert clean.split("\n")[-1] == "0 of 3 sources changed or unreadable"
        lines = changed.split("\n")
        assert lines[-1] == "1 of 3 sources changed or unreadable"
        assert f"H.main@{sha8(MAIN_PY)} handlers/main.py · 120 lines · changed: now @{new}" in lines
        assert f"D.notes@{sha8('inline never drifts')} inline text · 1 line" in lines
        assert f"H.other@{sha8('x = 1' + chr(10))} other.py · 1 line" in lines

    async def test_get_alias_of_a_changed_file_says_so_and_serves_the_current_content(
        self, connect: Connect, root: Path
    ) -> None:
        main = root / "handlers" / "main.py"
        current = MAIN_PY.replace("return 7\n", "return 'seven'\n")
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            main.write_text(current)
            page = await call_text(client, "get_alias", alias="H.main")
            by_old = await call_text(client, "get_alias", alias=f"H.main@{sha8(MAIN_PY)}")
            by_new = await call_text(client, "get_alias", alias=f"H.main@{sha8(current)}")
        heading = page.split("\n", 1)[0]
        assert f"was @{sha8(MAIN_PY)}" in heading
        assert f"now @{sha8(current)}" in heading
        assert "changed" in heading
        assert page_text(page) == current
        assert page_text(by_old) == current
        assert page_text(by_new) == current

    async def test_the_view_lists_sources_on_request_and_marks_the_changed_ones(
        self, connect: Connect, root: Path
    ) -> None:
        (root / "handlers" / "auth.py").write_text("def login():\n    pass\n")
        async with connect(allow_roots=(str(root),)) as client:
            await call_text(
                client, "frs_record", messages=[{"role": "user", "content": "fix login"}]
            )
            await add(client, path="handlers/main.py")
            await add(client, path="handlers/auth.py")
            plain = await call_text(client, "frs_view_thread")
            listed = await call_text(client, "frs_view_thread", show_sources=True)
            (root / "handlers" / "auth.py").write_text("def login():\n    return True\n")
            marked = await call_text(client, "frs_view_thread", show_sources=True)
        assert "Sources:" not in plain
        lines = listed.split("\n")
        block = lines[lines.index("Sources:") + 1 : lines.index("[1] User: fix login")]
        assert [line.strip() for line in block] == [
            f"H.auth@{sha8('def login():' + chr(10) + '    pass' + chr(10))} "
            "handlers/auth.py · 2 lines",
            f"H.main@{sha8(MAIN_PY)} handlers/main.py · 120 lines",
        ]
        assert all(SOURCE_LINE.match(line.strip()) for line in block)
        marks = [SOURCE_LINE.match(line.strip()) for line in marked.split("\n")]
        now = {m["alias"]: m["now"] for m in marks if m is not None}
        assert now == {"H.auth": sha8("def login():\n    return True\n"), "H.main": None}

    async def test_a_file_swapped_for_a_symlink_out_of_the_root_is_not_read(
        self, connect: Connect, root: Path, outside: Path
    ) -> None:
        main = root / "handlers" / "main.py"
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            main.unlink()
            main.symlink_to(outside)
            error = await refused(client, "get_alias", alias="H.main")
            verified = await call_text(client, "frs_source", action="verify")
        assert "outside every allowed root" in error
        assert "TOP SECRET" not in error + verified
        assert "unreadable" in verified


class TestRemove:
    async def test_remove_frees_the_alias_and_bumps_the_revision(
        self, connect: Connect, root: Path
    ) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            before = await revision(client)
            answer = await call_text(client, "frs_source", action="remove", alias="H.main")
            after = await revision(client)
            listed = await call_text(client, "frs_source", action="list")
            gone = await refused(client, "get_alias", alias="H.main")
            again = await add(client, alias="H.main", text="now inline")
        assert answer == f"Removed source H.main (handlers/main.py) · revision {after}"
        assert after == before + 1
        assert "H.main" not in listed
        assert "No alias 'H.main'" in gone
        assert again.startswith("Registered H.main@")
        assert (root / "handlers" / "main.py").read_text() == MAIN_PY, "the file is untouched"

    async def test_removing_an_unknown_source_is_refused_and_lists_the_known_ones(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await add(client, alias="D.notes", text="n")
            before = await state(client)
            error = await refused(client, "frs_source", action="remove", alias="D.other")
            after = await state(client)
        assert "D.notes" in error
        assert after == before


Setup = Callable[[Path, Path], None]


def _nothing(root: Path, outside: Path) -> None:
    pass


def _symlink_out(root: Path, outside: Path) -> None:
    (root / "link.txt").symlink_to(outside)


def _directory(root: Path, outside: Path) -> None:
    (root / "docs").mkdir()


def _large(root: Path, outside: Path) -> None:
    (root / "big.log").write_text("x" * 4_096)


def _binary(root: Path, outside: Path) -> None:
    (root / "image.txt").write_bytes(b"GIF89a\x00\x01\x02text")


def _latin1(root: Path, outside: Path) -> None:
    (root / "notes.txt").write_bytes("café crème brûlée\n".encode("latin-1"))


def _sibling(root: Path, outside: Path) -> None:
    # Shares the root's name as a string prefix: only a component-wise check refuses it.
    sibling = root.parent / (root.name + "-evil")
    sibling.mkdir()
    (sibling / "a.txt").write_text("TOP SECRET: next door\n")


def _fifo(root: Path, outside: Path) -> None:
    os.mkfifo(root / "pipe")


def _hardlink(root: Path, outside: Path) -> None:
    # A second name inside the root for a file outside it.
    os.link(outside, root / "linked.txt")


REFUSED_FILES = [
    pytest.param(
        _nothing, {"path": "{outside}"}, ["outside every allowed root", "{root}"], id="outside"
    ),
    pytest.param(
        _nothing, {"path": "../elsewhere/secret.txt"}, ["outside every allowed root"], id="dotdot"
    ),
    pytest.param(_symlink_out, {"path": "link.txt"}, ["symlink", "outside"], id="symlink-out"),
    pytest.param(
        _sibling,
        {"path": "{root}-evil/a.txt"},
        ["outside every allowed root"],
        id="sibling-with-the-roots-name",
    ),
    pytest.param(_nothing, {"path": "missing.py"}, ["No file at missing.py"], id="missing"),
    pytest.param(_directory, {"path": "docs"}, ["docs is a directory"], id="directory"),
    pytest.param(_large, {"path": "big.log"}, ["4,096 bytes", "limit is 1,000"], id="too-large"),
    pytest.param(_binary, {"path": "image.txt"}, ["binary", "NUL"], id="binary"),
    pytest.param(_latin1, {"path": "notes.txt"}, ["not UTF-8"], id="not-utf8"),
    pytest.param(_fifo, {"path": "pipe"}, ["not a regular file", "FIFO"], id="fifo"),
    pytest.param(_hardlink, {"path": "linked.txt"}, ["2 hard links"], id="hardlink"),
    pytest.param(
        _nothing, {"path": "/dev/zero"}, ["outside every allowed root"], id="device-outside"
    ),
]

REFUSED_ALIASES = [
    pytest.param({"alias": "h.main", "text": "t"}, ["'h.main' is not an alias"], id="lowercase"),
    pytest.param({"alias": "M.7", "text": "t"}, ["reserved for messages"], id="reserved-M"),
    pytest.param({"alias": "SQ.1", "text": "t"}, ["reserved for squashes"], id="reserved-SQ"),
    pytest.param({"alias": "M.notes", "text": "t"}, ["'M.notes' is not an alias"], id="M-name"),
    pytest.param({"alias": "D.a b", "text": "t"}, ["is not an alias"], id="space"),
    pytest.param({"alias": "D.notes@0b4f2d11", "text": "t"}, ["without @sha8"], id="with-sha8"),
    pytest.param({"text": "no alias"}, ["inline text needs a full alias"], id="inline-no-alias"),
    pytest.param(
        {"alias": "D", "text": "t"}, ["inline text needs a full alias"], id="inline-prefix"
    ),
    pytest.param({"alias": "h", "path": "handlers/main.py"}, ["a prefix is"], id="bad-prefix"),
    pytest.param({"alias": "M", "path": "handlers/main.py"}, ["a prefix is"], id="M-prefix"),
    pytest.param(
        {"alias": "D.x", "text": "t", "path": "handlers/main.py"}, ["not both"], id="text-and-path"
    ),
    pytest.param({"alias": "D.x"}, ["not both and not neither"], id="neither"),
]


class TestRefused:
    """Each bad input is a clear tool error, and nothing changes."""

    @pytest.mark.parametrize(("setup", "arguments", "says"), REFUSED_FILES)
    async def test_a_file_that_is_not_a_plain_text_file_under_a_root_is_refused(
        self,
        connect: Connect,
        root: Path,
        outside: Path,
        setup: Setup,
        arguments: dict[str, str],
        says: list[str],
    ) -> None:
        setup(root, outside)
        given = {k: v.format(outside=outside, root=root) for k, v in arguments.items()}
        async with connect(allow_roots=(str(root),), max_source_bytes=1_000) as client:
            await add(client, alias="D.kept", text="already here")
            before = await state(client)
            with anyio.fail_after(20):  # a FIFO must not block the read
                error = await refused(client, "frs_source", action="add", **given)
            after = await state(client)
        for fragment in says:
            assert fragment.format(root=root) in error, error
        assert "TOP SECRET" not in error
        assert after == before

    async def test_a_refusal_never_tells_whether_an_outside_path_exists_or_where_links_go(
        self, connect: Connect, root: Path, outside: Path
    ) -> None:
        (root / "out.txt").symlink_to(outside)
        (root / "dangling.txt").symlink_to(outside.parent / "missing.txt")
        async with connect(allow_roots=(str(root),)) as client:
            texts = {
                given: await refused(client, "frs_source", action="add", path=given)
                for given in ("out.txt", "dangling.txt")
            }
            exists = await refused(client, "frs_source", action="add", path=str(outside))
            missing = await refused(
                client, "frs_source", action="add", path=str(outside.parent / "missing.txt")
            )
        assert exists == missing.replace("missing.txt", "secret.txt")
        assert texts["out.txt"] == texts["dangling.txt"].replace("dangling.txt", "out.txt")
        for text in (*texts.values(), exists):
            assert "elsewhere" not in text.replace(str(outside.parent), "<given>"), text
            assert "outside every allowed root" in text

    @pytest.mark.parametrize(("arguments", "says"), REFUSED_ALIASES)
    async def test_a_bad_alias_or_argument_is_refused(
        self, connect: Connect, root: Path, arguments: dict[str, str], says: list[str]
    ) -> None:
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, alias="D.kept", text="already here")
            before = await state(client)
            error = await refused(client, "frs_source", action="add", **arguments)
            after = await state(client)
        for fragment in says:
            assert fragment in error, error
        assert after == before

    async def test_an_alias_taken_by_inline_text_names_what_holds_it(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await add(client, alias="D.notes", text="first")
            before = await state(client)
            error = await refused(client, "frs_source", action="add", alias="D.notes", text="2nd")
            after = await state(client)
        assert f"D.notes is already registered for inline text (@{sha8('first')})" in error
        assert "frs_source(action='remove', alias='D.notes')" in error
        assert after == before

    async def test_an_alias_taken_by_a_file_names_the_file(
        self, connect: Connect, root: Path
    ) -> None:
        (root / "main.md").write_text("# not code\n")
        async with connect(allow_roots=(str(root),)) as client:
            await add(client, path="handlers/main.py")
            before = await state(client)
            error = await refused(client, "frs_source", action="add", alias="H", path="main.md")
            after = await state(client)
        assert "H.main is already registered for handlers/main.py" in error
        assert after == before

    @pytest.mark.parametrize("name", ["frs.db", "frs.db-wal", "frs.db-shm"])
    async def test_the_servers_own_database_inside_a_root_is_refused(
        self, connect: Connect, db_path: Path, name: str
    ) -> None:
        async with connect(allow_roots=(str(db_path.parent),)) as client:
            await add(client, alias="D.kept", text="already here")
            assert (db_path.parent / name).exists()
            before = await state(client)
            error = await refused(client, "frs_source", action="add", alias="D.db", path=name)
            after = await state(client)
        assert "the server's own database" in error
        assert after == before

    async def test_without_roots_files_are_refused_and_the_error_says_how_to_allow_one(
        self, connect: Connect, root: Path
    ) -> None:
        async with connect() as client:
            await add(client, alias="D.kept", text="already here")
            before = await state(client)
            error = await refused(
                client, "frs_source", action="add", path=str(root / "handlers" / "main.py")
            )
            after = await state(client)
        assert "--allow-root" in error
        assert "inline" in error
        assert after == before

    async def test_a_stale_expected_revision_is_refused(self, connect: Connect) -> None:
        async with connect() as client:
            await add(client, alias="D.kept", text="already here")
            before = await state(client)
            error = await refused(
                client, "frs_source", action="add", alias="D.new", text="t", expected_revision=0
            )
            after = await state(client)
        assert "Stale revision" in error
        assert after == before

    async def test_get_alias_of_an_unknown_source_lists_the_registered_ones(
        self, connect: Connect
    ) -> None:
        async with connect() as client:
            await add(client, alias="D.notes", text="n")
            error = await refused(client, "get_alias", alias="D.other")
        assert "registered: D.notes" in error

    async def test_an_offset_past_the_end_of_a_source_says_its_size(self, connect: Connect) -> None:
        async with connect() as client:
            await add(client, alias="D.notes", text="0123456789")
            error = await refused(client, "get_alias", alias="D.notes", offset=11)
        assert "past the end" in error
        assert "10 characters" in error

    async def test_an_unknown_action_is_refused_with_the_choices(self, connect: Connect) -> None:
        async with connect() as client:
            error = await refused(client, "frs_source", action="delete", alias="D.x")
        assert "add, list, verify or remove" in error
