"""The four hosts are pinned to exact versions, and a host that is not installed for this
machine fails with a message naming the package, never silently."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.clients import npm
from tests.hosts import pinned

pytestmark = pytest.mark.hosts

HOSTS = {
    "@anthropic-ai/claude-code": "2.1.332",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
    "opencode-ai": "1.18.33",
}


def test_each_host_is_pinned_exactly_in_package_json_and_the_lock() -> None:
    manifest = json.loads((pinned.HERE / "package.json").read_text(encoding="utf-8"))
    lock = json.loads((pinned.HERE / "package-lock.json").read_text(encoding="utf-8"))
    assert manifest["dependencies"] == HOSTS
    for package, version in HOSTS.items():
        assert lock["packages"][f"node_modules/{package}"]["version"] == version
        assert lock["packages"][""]["dependencies"][package] == version


@pytest.mark.parametrize("host", [pinned.claude, pinned.opencode])
def test_a_missing_native_binary_names_its_package(host, tmp_path: Path) -> None:
    with pytest.raises(npm.NodeMissing, match=r"no native binary .* the package \S+ only where"):
        host(tmp_path)
