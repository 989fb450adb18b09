"""The MCPB bundle for Claude Desktop's one-click install (issue 10): manifest.json at the root.

The manifest is of server type `uv`: the host runs `uv run --directory <bundle> frs-mcp`, which
builds frs-mcp from the bundle's pyproject.toml. The MCPB command-line tool, pinned in
tests/clients/package.json, validates it and packs it (as `make bundle` does); the packed bundle
must hold what uv needs and nothing else.
"""

from __future__ import annotations

import json
import subprocess
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.clients import npm
from tests.conftest import Connect
from tests.dists import REPO

pytestmark = [pytest.mark.clients, pytest.mark.slow]

PACKAGES = ("frs", "storage", "server", "runtimes")
# Building frs-mcp reads README.md and LICENSE too: pyproject.toml names them.
UV_NEEDS = {"manifest.json", "pyproject.toml", "README.md", "LICENSE"}


@pytest.fixture(scope="module")
def mcpb() -> list[str]:
    """The pinned `mcpb` command, on the Node the client tests use."""
    try:
        root = npm.install()
        return [npm.node(root), str(npm.command(root, "mcpb"))]
    except npm.NodeMissing as exc:
        pytest.fail(f"the MCPB command-line tool cannot run: {exc}")


@pytest.fixture
def manifest() -> dict[str, Any]:
    return dict(json.loads((REPO / "manifest.json").read_text(encoding="utf-8")))


def run(command: list[str], *args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=REPO
    )


class TestManifest:
    def test_mcpb_validates_it(self, mcpb: list[str]) -> None:
        done = run(mcpb, "validate", REPO / "manifest.json")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "Manifest schema validation passes!" in done.stdout

    def test_it_agrees_with_pyproject(self, manifest: dict[str, Any]) -> None:
        project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        assert (manifest["name"], manifest["version"]) == (project["name"], project["version"])
        assert manifest["license"] == project["license"]
        assert manifest["compatibility"]["runtimes"]["python"] == project["requires-python"]

    def test_uv_runs_the_frs_mcp_command_on_the_database_the_user_chose(
        self, manifest: dict[str, Any]
    ) -> None:
        server = manifest["server"]
        assert (manifest["manifest_version"], server["type"]) == ("0.4", "uv")
        config = server["mcp_config"]
        # Claude Desktop runs its own uv for this type and passes the args as they are.
        assert config["args"] == ["run", "--directory", "${__dirname}", "frs-mcp"]
        assert config["env"] == {"FRS_DB": "${user_config.database}"}
        assert manifest["user_config"]["database"]["required"] is False

    async def test_it_lists_the_tools_the_server_has(
        self, manifest: dict[str, Any], connect: Connect
    ) -> None:
        async with connect() as client:
            listed = await client.list_tools()
        assert [tool["name"] for tool in manifest["tools"]] == [t.name for t in listed.tools]


class TestPackedBundle:
    def test_it_holds_what_uv_needs_and_nothing_else(self, mcpb: list[str], tmp_path: Path) -> None:
        bundle = tmp_path / "frs-mcp.mcpb"
        done = run(mcpb, "pack", REPO, bundle)
        assert done.returncode == 0, done.stdout + done.stderr
        with zipfile.ZipFile(bundle) as archive:
            packed = set(archive.namelist())
        sources = {
            path.relative_to(REPO).as_posix()
            for package in PACKAGES
            for path in (REPO / package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts
        }
        assert packed == UV_NEEDS | sources
