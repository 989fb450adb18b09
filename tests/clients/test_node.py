"""The Node the npm-based tests run on (tests/clients/npm.py): one that runs on this machine.

The system `node` is used when it is 22.19 or later; otherwise the Node 22 binary of the npm
package for this platform, which npm installed because its `os` and `cpu` match, leaving the
other platforms' packages out.
"""

from __future__ import annotations

import json
import shutil

import pytest

from tests.clients import npm
from tests.clients.conftest import NodeClients

pytestmark = [pytest.mark.clients, pytest.mark.slow]


class TestNode:
    def test_the_chosen_node_runs_and_is_recent_enough(self, node_clients: NodeClients) -> None:
        found = npm.version_of(node_clients.node)
        assert found is not None, node_clients.node
        assert found >= npm.MIN_NODE

    def test_the_system_node_is_used_exactly_when_it_is_recent_enough(
        self, node_clients: NodeClients
    ) -> None:
        system = shutil.which("node")
        recent = system is not None and (npm.version_of(system) or ()) >= npm.MIN_NODE
        assert (node_clients.node == system) == recent

    def test_npm_installed_the_node_package_of_this_platform_and_no_other(
        self, node_clients: NodeClients
    ) -> None:
        installed = {
            package
            for package in npm.PLATFORM_NODE.values()
            if node_clients.package(package).is_dir()
        }
        assert installed == {npm.platform_package()}

    def test_the_lock_file_pins_each_platform_package_as_optional_with_its_os_and_cpu(
        self,
    ) -> None:
        lock = json.loads((npm.HERE / "package-lock.json").read_text(encoding="utf-8"))
        for (os_name, cpu), package in npm.PLATFORM_NODE.items():
            entry = lock["packages"][f"node_modules/{package}"]
            assert entry["optional"] is True, package
            assert (entry["os"], entry["cpu"]) == (os_name, cpu), package
            assert entry["version"].startswith("22."), package
