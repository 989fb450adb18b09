"""server.json, our entry for the MCP registry (issue 10).

It must validate against the registry's schema of 2025-12-11, vendored in tests/data so this runs
offline, and agree with pyproject.toml: the registry lists the version it is given, and an
installer fetches the PyPI package it names.
"""

from __future__ import annotations

import copy
import json
import tomllib
from typing import Any

import pytest
from jsonschema import Draft7Validator

from tests.dists import REPO

SCHEMA_URL = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"
NAME = "io.github.frs-mcp/frs-mcp"


def load(name: str) -> Any:
    return json.loads((REPO / name).read_text(encoding="utf-8"))


def problems(entry: dict[str, Any]) -> list[str]:
    """What the registry's schema says is wrong with `entry`, one line each."""
    schema = load("tests/data/server.schema.json")
    validator = Draft7Validator(schema, format_checker=Draft7Validator.FORMAT_CHECKER)
    return sorted(f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(entry))


@pytest.fixture
def entry() -> dict[str, Any]:
    return dict(load("server.json"))


@pytest.fixture
def project() -> dict[str, Any]:
    return dict(tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"])


class TestServerJson:
    def test_the_vendored_schema_is_the_2025_12_11_one_and_a_valid_schema(self) -> None:
        schema = load("tests/data/server.schema.json")
        Draft7Validator.check_schema(schema)
        assert schema["$id"] == SCHEMA_URL

    def test_it_is_valid_against_the_registrys_schema(self, entry: dict[str, Any]) -> None:
        assert entry["$schema"] == SCHEMA_URL
        assert problems(entry) == []

    def test_the_schema_check_catches_what_the_registry_would_refuse(
        self, entry: dict[str, Any]
    ) -> None:
        broken = copy.deepcopy(entry)
        del broken["version"]
        broken["name"] = "frs-mcp"
        broken["packages"][0]["version"] = "latest"
        assert len(problems(broken)) == 3

    def test_its_name_and_versions_agree_with_pyproject(
        self, entry: dict[str, Any], project: dict[str, Any]
    ) -> None:
        assert entry["name"] == NAME
        (package,) = entry["packages"]
        assert package["identifier"] == project["name"]
        assert entry["version"] == package["version"] == project["version"]

    def test_it_installs_the_pypi_package_and_speaks_stdio(self, entry: dict[str, Any]) -> None:
        (package,) = entry["packages"]
        assert (package["registryType"], package["runtimeHint"]) == ("pypi", "uvx")
        assert package["transport"] == {"type": "stdio"}
        assert [v["name"] for v in package["environmentVariables"]] == ["FRS_DB"]
