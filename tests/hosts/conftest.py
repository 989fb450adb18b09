"""Fixtures for the host tests: the scripted model on 127.0.0.1 and the pinned hosts.

The first test that needs the hosts installs them into .cache/npm-hosts (tests/hosts/pinned.py).
If Node, npm, the registry or a host's binary for this machine is missing, the test fails and
says what to do: it never skips.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients import npm
from tests.hosts import pinned
from tests.hosts.model import ModelServer


@pytest.fixture
def model_server() -> Iterator[ModelServer]:
    """A scripted model with an empty script; the test calls `play(Script([...]))`."""
    with ModelServer() as server:
        yield server


@pytest.fixture(scope="session")
def hosts_root() -> Path:
    """The folder whose node_modules holds the four pinned hosts."""
    try:
        return pinned.install()
    except npm.NodeMissing as exc:
        pytest.fail(f"the pinned agent hosts cannot be installed: {exc}")
