"""The order in which the two pytest-xdist workers take the test files: the heaviest first.

`make test` runs `-n 2 --dist loadfile --no-loadscope-reorder`: each file goes whole to one
worker (its module fixtures built once), in collection order, and a worker takes the next file
when it is free. xdist's own order (the files with the most tests first) left the files of a few
long tests (real hosts, load, crash, the instances behind haproxy) to the end, where one worker
ran them while the other had nothing left. Heaviest first, the short files fill in at the end
and both workers finish within a few seconds of each other.

`SECONDS` holds what each file took in one whole run on the project's 2-core machine (setup,
call and teardown of its tests; other jobs kept it busy, so only the order of the figures
matters). A file not listed weighs nothing and keeps its place among the others. The order
changes how long the run takes, never what it tests; `python -m tests.schedule REPORT.xml`
prints the table again from a run's `pytest --junitxml=REPORT.xml`.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Sequence

import pytest

SECONDS: dict[str, int] = {
    "tests/robust/test_bad_inputs.py": 570,
    "tests/web/test_viewer.py": 427,
    "tests/server/test_export.py": 351,
    "tests/hosts/test_claude_code.py": 350,
    "tests/server/test_database_values.py": 258,
    "tests/server/test_tools.py": 235,
    "tests/hosts/test_opencode.py": 213,
    "tests/server/test_redaction.py": 194,
    "tests/storage/test_contract.py": 193,
    "tests/server/test_cli.py": 192,
    "tests/robust/test_load.py": 187,
    "tests/frs/test_text.py": 167,
    "tests/server/test_scopes.py": 159,
    "tests/robust/test_instances.py": 144,
    "tests/server/test_http.py": 137,
    "tests/clients/test_conformance.py": 124,
    "tests/server/test_budget.py": 120,
    "tests/robust/test_render_safety.py": 120,
    "tests/test_install_docs.py": 112,
    "tests/hosts/test_gemini_cli.py": 111,
    "tests/robust/test_crash.py": 101,
    "tests/server/test_hardening.py": 99,
    "tests/server/test_origin.py": 92,
    "tests/robust/test_model.py": 81,
    "tests/server/test_tenants_http.py": 80,
    "tests/server/test_import.py": 79,
    "tests/server/test_bad_input.py": 78,
    "tests/server/test_http_hygiene.py": 74,
    "tests/server/test_conversations.py": 69,
    "tests/robust/test_fuzz.py": 63,
    "tests/server/test_stdio.py": 63,
    "tests/hosts/test_codex.py": 62,
    "tests/server/test_live.py": 52,
    "tests/gateway/test_opencode.py": 52,
    "tests/server/test_postgres_cli.py": 52,
    "tests/clients/test_inspector.py": 51,
    "tests/server/test_sources.py": 49,
    "tests/gateway/test_squashes.py": 46,
    "tests/server/test_tokens_file.py": 45,
    "tests/web/test_browser.py": 45,
    "tests/clients/test_typescript_sdk.py": 45,
    "tests/test_packaging.py": 44,
    "tests/server/test_live_transports.py": 41,
    "tests/server/test_restore_gaps.py": 39,
    "tests/gateway/test_passthrough.py": 32,
    "tests/runtimes/test_adk.py": 30,
    "tests/server/test_runs.py": 30,
    "tests/runtimes/test_langchain.py": 29,
    "tests/server/test_focus.py": 28,
    "tests/test_bundle.py": 27,
    "tests/gateway/test_openai.py": 27,
    "tests/storage/test_migrations.py": 25,
    "tests/server/test_cards.py": 25,
    "tests/server/test_client_facing.py": 25,
    "tests/server/test_pairing.py": 22,
    "tests/server/test_resources.py": 21,
    "tests/robust/test_two_processes.py": 20,
    "tests/gateway/test_claude_code.py": 19,
    "tests/server/test_tenant_shares.py": 17,
    "tests/runtimes/test_readme_examples.py": 16,
}


def heaviest_first(items: list[pytest.Item]) -> None:
    """Sort `items` by their file's weight, heaviest first; a stable sort, so the tests of a
    file and the files of equal weight keep their collection order."""
    items.sort(key=lambda item: -SECONDS.get(item.nodeid.split("::", 1)[0], 0))


def table(report: str, top: int = 60) -> str:
    """`SECONDS` as Python source, from a JUnit XML report (a test's `time` is its setup, call
    and teardown): the `top` heaviest files of at least one second."""
    per_file: defaultdict[str, float] = defaultdict(float)
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        while module and module[-1][:1].isupper():  # the test's class, not its file
            module.pop()
        per_file["/".join(module) + ".py"] += float(case.get("time", "0"))
    heavy = sorted(per_file.items(), key=lambda kv: -kv[1])[:top]
    rows = "".join(f'    "{name}": {round(took)},\n' for name, took in heavy if took >= 1)
    return "SECONDS: dict[str, int] = {\n" + rows + "}"


def main(argv: Sequence[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m tests.schedule REPORT.xml (pytest --junitxml)", file=sys.stderr)
        return 2
    print(table(argv[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
