"""frs-mcp as a host runs it: a real subprocess speaking MCP over stdin/stdout."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.types import TextContent

ROOT = Path(__file__).resolve().parents[2]
FRS_MCP = shutil.which("frs-mcp", path=str(Path(sys.executable).parent)) or "frs-mcp"

pytestmark = pytest.mark.slow


def params(*args: str, env: dict[str, str] | None = None) -> StdioServerParameters:
    return StdioServerParameters(command=FRS_MCP, args=list(args), env=env)


async def call(client: Client, tool: str, **arguments: Any) -> str:
    result = await client.call_tool(tool, arguments)
    block = result.content[0]
    assert isinstance(block, TextContent)
    assert not result.is_error, block.text
    return block.text


class TestStdio:
    async def test_what_one_process_recorded_and_squashed_survives_a_restart(
        self, tmp_path: Path
    ) -> None:
        db = str(tmp_path / "frs.db")
        async with Client(params("--db", db)) as client:
            await call(client, "frs_session", action="start", title="Survives")
            await call(
                client,
                "frs_record",
                messages=[
                    {"role": "user", "content": "first"},
                    {"role": "assistant", "content": "second " * 20},
                    {"role": "assistant", "content": "third " * 20},
                    {"role": "user", "content": "fourth"},
                ],
            )
            squashed = await call(
                client, "frs_compress_range", **{"from": 2, "to": 3}, summary="2-3"
            )
            before = await call(client, "frs_view_thread")
        async with Client(params("--db", db)) as client:
            after = await call(client, "frs_view_thread")
            originals = await call(client, "get_alias", alias="SQ.1")
            restored = await call(client, "frs_restore", alias="SQ.1")
            final = await call(client, "frs_view_thread")
        assert after == before
        assert "[2] Summary of 2 messages (SQ.1@" in after
        assert "SQ.1@" in squashed
        assert "second second" in originals
        assert "third third" in originals
        assert restored.endswith("revision 3")
        assert "[2] Assistant: second" in final
        assert "[4] User: fourth" in final

    async def test_with_no_arguments_it_serves_the_user_data_directory_database(
        self, tmp_path: Path
    ) -> None:
        env = {"XDG_DATA_HOME": str(tmp_path / "data"), "HOME": str(tmp_path)}
        env.pop("FRS_DB", None)
        async with Client(params(env=env)) as client:
            await call(client, "frs_record", messages=[{"role": "user", "content": "hello"}])
        assert (tmp_path / "data" / "frs-mcp" / "frs.db").is_file()

    async def test_a_relative_xdg_data_home_is_ignored_as_the_spec_says(
        self, tmp_path: Path
    ) -> None:
        (tmp_path / "cwd").mkdir()
        env = {"XDG_DATA_HOME": "relative", "HOME": str(tmp_path)}
        server = params(env=env).model_copy(update={"cwd": tmp_path / "cwd"})
        async with Client(server) as client:
            await call(client, "frs_record", messages=[{"role": "user", "content": "hello"}])
        assert (tmp_path / ".local" / "share" / "frs-mcp" / "frs.db").is_file()
        assert list((tmp_path / "cwd").iterdir()) == []

    async def test_frs_db_names_the_database_and_db_overrides_it(self, tmp_path: Path) -> None:
        env = {"FRS_DB": str(tmp_path / "env.db"), "HOME": str(tmp_path)}
        async with Client(params(env=env)) as client:
            await call(client, "frs_record", messages=[{"role": "user", "content": "env"}])
        async with Client(params("--db", str(tmp_path / "flag.db"), env=env)) as client:
            await call(client, "frs_record", messages=[{"role": "user", "content": "flag"}])
        assert (tmp_path / "env.db").is_file()
        assert (tmp_path / "flag.db").is_file()

    def test_the_mcp_json_entry_runs_the_installed_console_script(self) -> None:
        entry = json.loads((ROOT / "mcp.json").read_text(encoding="utf-8"))["mcpServers"]["frs"]
        # An install from the checkout puts the console script of pyproject.toml on a path the
        # user writes in; hosts start servers with a short PATH, so the entry names it whole.
        assert os.path.isabs(entry["command"])
        assert os.path.basename(entry["command"]) == os.path.basename(FRS_MCP) == "frs-mcp"
        assert "args" not in entry


class TestEveryLineIsAnswered:
    INIT = (
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
    )

    def answers(self, tmp_path: Path, *lines: bytes, flags: tuple[str, ...] = ()) -> list[Any]:
        done = subprocess.run(
            [FRS_MCP, "--db", str(tmp_path / "frs.db"), "--log-level", "WARNING", *flags],
            input=b"\n".join(lines) + b"\n",
            capture_output=True,
            timeout=60,
            check=True,
        )
        sent = [json.loads(line) for line in done.stdout.splitlines()]
        # Notifications (a new session's resource-list change) answer nothing.
        return [message for message in sent if "method" not in message]

    def test_bad_lines_get_errors_in_order_and_the_server_keeps_serving(
        self, tmp_path: Path
    ) -> None:
        answers = self.answers(
            tmp_path,
            b"not json",
            b'{"jsonrpc":"2.0","id":"a7","method":"tools/call","params":"x"}',
            b"[1, 2]",
            self.INIT,
        )
        assert [a.get("id") for a in answers] == [None, "a7", None, 1]
        assert [a["error"]["code"] for a in answers[:3]] == [-32700, -32600, -32600]
        assert answers[3]["result"]["serverInfo"]["name"] == "frs-mcp"

    def test_a_line_over_the_cap_is_refused_without_stopping_the_server(
        self, tmp_path: Path
    ) -> None:
        big = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":"' + b"a" * 5000 + b'"}}'
        answers = self.answers(tmp_path, big, self.INIT, flags=("--max-line-bytes", "2048"))
        assert answers[0]["error"]["code"] == -32600
        assert "a line over 2,048 bytes" in answers[0]["error"]["message"]
        assert answers[1]["id"] == 1
        assert "result" in answers[1]

    def test_requests_still_running_when_stdin_ends_are_answered(self, tmp_path: Path) -> None:
        # A client that writes its requests and closes stdin (the spec's shutdown order, or a
        # shell pipe) used to get "Connection closed" for the calls still running.
        record = [{"role": "user", "content": f"m{i} " * 200} for i in range(2_000)]
        calls = [
            {"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": params}
            for i, params in enumerate(
                [
                    {"name": "frs_record", "arguments": {"messages": record}},
                    {"name": "frs_view_thread", "arguments": {"last": 5}},
                    {"name": "frs_session", "arguments": {"action": "info"}},
                ]
            )
        ]
        answers = self.answers(
            tmp_path,
            self.INIT,
            b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
            *(json.dumps(call).encode() for call in calls),
        )
        by_id = {a["id"]: a for a in answers}
        assert sorted(by_id) == [1, 10, 11, 12]
        assert [("error" in by_id[i], by_id[i]["result"]["isError"]) for i in (10, 11, 12)] == [
            (False, False)
        ] * 3
        assert by_id[10]["result"]["content"][0]["text"].startswith(
            "Recorded 2000 messages at positions 1–2000"
        )
