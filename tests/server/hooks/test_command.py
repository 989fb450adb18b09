"""`frs-mcp hook HOST EVENT` as a host runs it: a process with the hook's JSON on stdin, the
real SQLite file, the host's transcript in the host's folder under HOME.

What a hook promises its host: it exits 0 whatever happens; stdout holds the host's answer and
nothing else; anything wrong is one line on stderr, and then nothing is written.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from frs import pages as frs_pages
from frs.hooks import find_recorded
from frs.model import SessionId
from tests.frs.conftest import open_env
from tests.pg import Cluster
from tests.server.hooks.transcripts import (
    ClaudeTranscript,
    CodexRollout,
    GeminiChat,
    OpenCodeStore,
    text,
    tool_use,
)

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[3]


@dataclass(frozen=True)
class Hooked:
    returncode: int
    stdout: str
    stderr: str


def hook(home: Path, host: str, event: str, given: Any, *flags: str) -> Hooked:
    """`frs-mcp hook HOST EVENT` with `given` on stdin (JSON unless bytes), HOME at `home`."""
    data = given if isinstance(given, bytes) else json.dumps(given).encode()
    keep = {k: os.environ[k] for k in ("PATH", "LANG", "SYSTEMROOT") if k in os.environ}
    done = subprocess.run(
        [sys.executable, "-m", "server.entry", "hook", host, event, "--db", "~/frs.db", *flags],
        input=data,
        capture_output=True,
        env={**keep, "HOME": str(home)},
        cwd=REPO,
        timeout=60,
        check=False,
    )
    return Hooked(done.returncode, done.stdout.decode(), done.stderr.decode())


def refused(done: Hooked) -> str:
    """The one line a refused hook prints, after checking it printed nothing else."""
    assert done.returncode == 0
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


async def entries(home: Path, host: str, conversation: str) -> list[str]:
    async with open_env(home / "frs.db") as service:
        found = await find_recorded(service, host, conversation)
    return [] if found is None else [m.content for m in found.entries]


def claude(home: Path) -> ClaudeTranscript:
    cc = ClaudeTranscript(home)
    cc.bookkeeping()
    cc.prompt("Fix the failing test")
    cc.answer("msg_1", text("Running it."), tool_use("toolu_1", "Bash", command="pytest -q"))
    cc.result("toolu_1", "E   AssertionError: 2 != 3\n1 failed", error=True)
    cc.answer("msg_2", text("The sum is off by one."))
    cc.write()
    return cc


class TestRecording:
    async def test_stop_records_the_transcript_and_a_second_stop_nothing(
        self, tmp_path: Path
    ) -> None:
        cc = claude(tmp_path)
        first = hook(tmp_path, "claude-code", "Stop", cc.hook("Stop"))
        second = hook(tmp_path, "claude-code", "Stop", cc.hook("Stop"))
        for done in (first, second):
            assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert await entries(tmp_path, "claude-code", cc.session) == [
            "Fix the failing test",
            "Running it.",
            "E   AssertionError: 2 != 3\n1 failed",
            "The sum is off by one.",
        ]

    async def test_a_line_still_being_written_waits_for_the_next_event(
        self, tmp_path: Path
    ) -> None:
        cc = claude(tmp_path)
        cc.prompt("Now fix it")
        whole = cc.lines.pop()
        cc.write(torn=whole[: len(whole) // 2])
        hook(tmp_path, "claude-code", "PreCompact", cc.hook("PreCompact", trigger="auto"))
        # Claude Code had not flushed its transcript for PreCompact: the last answer waits too.
        assert (await entries(tmp_path, "claude-code", cc.session))[-1].endswith("1 failed")
        cc.lines.append(whole)
        cc.write()
        hook(tmp_path, "claude-code", "Stop", cc.hook("Stop"))
        recorded = await entries(tmp_path, "claude-code", cc.session)
        assert recorded[-2:] == ["The sum is off by one.", "Now fix it"]
        assert len(recorded) == 5

    async def test_a_subagent_is_a_conversation_of_its_own_and_the_compactions_fork_none(
        self, tmp_path: Path
    ) -> None:
        cc = claude(tmp_path)
        agent = cc.path.parent / cc.session / "subagents" / "agent-a60ec352.jsonl"
        sub = ClaudeTranscript(tmp_path, cc.session)
        sub._line("user", message={"role": "user", "content": "Find the config"}, isSidechain=True)
        sub.answer("msg_s", text("config.toml"))
        agent.parent.mkdir(parents=True)
        agent.write_text("".join(line + "\n" for line in sub.lines))
        stop = cc.hook("SubagentStop", agent_id="a60ec352", agent_transcript_path=str(agent))
        done = hook(tmp_path, "claude-code", "SubagentStop", stop)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        conversation = f"{cc.session}/a60ec352"
        assert await entries(tmp_path, "claude-code", conversation) == [
            "Find the config",
            "config.toml",
        ]
        fork = cc.hook(
            "SubagentStop",
            agent_id="b1",
            agent_type="",
            agent_transcript_path=str(cc.path.parent / cc.session / "subagents" / "agent-b1.jsonl"),
        )
        done = hook(tmp_path, "claude-code", "SubagentStop", fork)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert await entries(tmp_path, "claude-code", f"{cc.session}/b1") == []

    async def test_codex_stop_records_the_rollout(self, tmp_path: Path) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Make it build")
        rollout.call("call_1", "make", "make: *** [all] Error 2")
        rollout.say("The build fails.")
        rollout.write()
        done = hook(tmp_path, "codex", "Stop", rollout.hook("Stop", stop_hook_active=False))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        recorded = await entries(tmp_path, "codex", rollout.thread)
        assert recorded[0] == "Make it build"
        assert recorded[-1] == "The build fails."

    async def test_gemini_after_agent_records_the_chat_file(self, tmp_path: Path) -> None:
        chat = GeminiChat(tmp_path)
        chat.header()
        chat.record("u1", "user", [{"text": "Say hi"}])
        chat.record("g1", "gemini", "hi")
        chat.write()
        done = hook(tmp_path, "gemini-cli", "AfterAgent", chat.hook("AfterAgent"))
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert await entries(tmp_path, "gemini-cli", chat.session) == ["Say hi", "hi"]

    async def test_opencode_idle_records_the_session_from_its_store(self, tmp_path: Path) -> None:
        store = OpenCodeStore(tmp_path)
        store.user("Run the tests")
        store.step("Running.", ("call_1", "bash", {"command": "npm test"}, "1 failing"))
        given = {"session_id": store.session}
        done = hook(tmp_path, "opencode", "idle", given)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert await entries(tmp_path, "opencode", store.session) == [
            "Run the tests",
            "Running.",
            "1 failing",
        ]


ALIAS = re.compile(r"\bM\.\d+\b")


class TestDigest:
    async def test_after_a_compaction_the_digests_aliases_return_the_originals(
        self, tmp_path: Path
    ) -> None:
        cc = claude(tmp_path)
        start = cc.hook("SessionStart", source="compact", model="claude-opus-5-5")
        done = hook(tmp_path, "claude-code", "SessionStart", start)
        assert done.returncode == 0
        assert done.stderr == ""
        answer = json.loads(done.stdout)["hookSpecificOutput"]
        assert answer["hookEventName"] == "SessionStart"
        digest = answer["additionalContext"]
        assert "pytest -q" in digest
        session = re.search(r'session_id="([0-9a-f]+)"', digest)
        assert session is not None
        originals = {
            "Fix the failing test",
            'Running it.\n[tool_use:Bash id=toolu_1]\n{"command":"pytest -q"}',
            "E   AssertionError: 2 != 3\n1 failed",
        }
        [error_line] = [line for line in digest.splitlines() if "AssertionError: 2 != 3" in line]
        named = {m.group(0) for m in ALIAS.finditer(digest) if m.group(0) != "M.1"} | {"M.1"}
        async with open_env(tmp_path / "frs.db") as service:
            pages = {
                alias: (
                    await frs_pages.get_alias(service, alias, session_id=SessionId(session[1]))
                ).text
                for alias in named
            }
        # Every alias returns an original whole, and the open error's returns the error.
        assert set(pages.values()) <= originals
        [error_alias] = ALIAS.findall(error_line)
        assert pages[error_alias] == "E   AssertionError: 2 != 3\n1 failed"

    def test_claude_codes_digest_fits_what_it_shows_inline(self, tmp_path: Path) -> None:
        """Claude Code moves hook context of over 10,000 characters to a file: its digest is
        made to fit, where another host's of the same thread is longer."""
        cc = ClaudeTranscript(tmp_path)
        cc.prompt("Make every module's tests pass")
        for n in range(120):
            command = f"pytest -q tests/test_module_{n}.py"
            cc.answer(
                f"msg_{n}",
                text(f"Testing module {n}."),
                tool_use(f"toolu_{n}", "Bash", command=command),
            )
            error = (
                f"E   AssertionError: module {n} returned {n + 1}, expected {n} (see src/m{n}.py)"
            )
            cc.result(f"toolu_{n}", f"Exit code 1\n{error}\n1 failed", error=True)
        cc.write()
        start = cc.hook("SessionStart", source="compact")
        done = hook(tmp_path, "claude-code", "SessionStart", start)
        digest = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
        assert 5_000 < len(digest) <= 9_900
        wide = hook(tmp_path, "claude-code", "SessionStart", start, "--tokens", "8000")
        assert len(json.loads(wide.stdout)["hookSpecificOutput"]["additionalContext"]) <= 9_900
        # In two parts, one hook each, each part fits and together they hold more.
        parts = [
            json.loads(hook(tmp_path, "claude-code", "SessionStart", start, "--part", k).stdout)
            for k in ("1/2", "2/2")
        ]
        texts = [part["hookSpecificOutput"]["additionalContext"] for part in parts]
        assert [text.split("\n")[0] for text in texts] == [
            "[FRS digest, part 1 of 2]",
            "[FRS digest, part 2 of 2]",
        ]
        assert all(len(text) <= 9_900 for text in texts)
        errors = [len(re.findall(r"AssertionError: module \d+", t)) for t in (digest, *texts)]
        assert errors[1] + errors[2] > errors[0]

    def test_a_digest_that_fits_one_part_leaves_the_second_hook_nothing(
        self, tmp_path: Path
    ) -> None:
        cc = claude(tmp_path)
        start = cc.hook("SessionStart", source="compact")
        first = hook(tmp_path, "claude-code", "SessionStart", start, "--part", "1/2")
        second = hook(tmp_path, "claude-code", "SessionStart", start, "--part", "2/2")
        assert json.loads(first.stdout)["hookSpecificOutput"]["additionalContext"].startswith(
            "FRS (frs-mcp) recorded"
        )
        assert (second.returncode, second.stdout, second.stderr) == (0, "", "")

    def test_session_start_of_any_other_source_answers_nothing(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        done = hook(
            tmp_path, "claude-code", "SessionStart", cc.hook("SessionStart", source="resume")
        )
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        assert not (tmp_path / "frs.db").exists()

    def test_codex_answers_its_session_start_after_a_compaction(self, tmp_path: Path) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Make it build")
        rollout.call("call_1", "make", "make: *** [all] Error 2")
        rollout.compacted("SUMMARY")
        rollout.write()
        done = hook(
            tmp_path, "codex", "SessionStart", rollout.hook("SessionStart", source="compact")
        )
        answer = json.loads(done.stdout)["hookSpecificOutput"]
        assert answer["hookEventName"] == "SessionStart"
        assert "make: *** [all] Error 2" in answer["additionalContext"]
        assert "SUMMARY" not in answer["additionalContext"]

    def test_gemini_before_model_adds_the_digest_to_the_snapshot_only(self, tmp_path: Path) -> None:
        chat = GeminiChat(tmp_path)
        chat.header()
        chat.record("u1", "user", [{"text": "Say hi"}])
        chat.record("g1", "gemini", "hi")
        chat.write()
        hook(tmp_path, "gemini-cli", "AfterAgent", chat.hook("AfterAgent"))
        snapshot = "<session_context>x</session_context><state_snapshot>S</state_snapshot>"
        request = {
            "messages": [{"role": "user", "content": snapshot}, {"role": "user", "content": "Go"}]
        }
        done = hook(
            tmp_path, "gemini-cli", "BeforeModel", chat.hook("BeforeModel", llm_request=request)
        )
        messages = json.loads(done.stdout)["hookSpecificOutput"]["llm_request"]["messages"]
        assert len(messages) == 1
        assert messages[0]["content"].startswith(snapshot + "\n\nFRS")
        assert "Task (M.1): Say hi" in messages[0]["content"]

    def test_opencode_answers_system_only_for_a_compacted_session(self, tmp_path: Path) -> None:
        store = OpenCodeStore(tmp_path)
        store.user("Run the tests")
        store.step("Running.", ("call_1", "bash", {"command": "npm test"}, "1 failing"))
        given = {"session_id": store.session}
        assert hook(tmp_path, "opencode", "system", given).stdout == ""
        store.compaction("OC-SUMMARY")
        digest = hook(tmp_path, "opencode", "compacting", given).stdout
        assert digest.startswith("FRS (frs-mcp) recorded")
        assert "npm test" in digest
        assert hook(tmp_path, "opencode", "system", given).stdout == digest


class TestBadInput:
    """Nothing on stdout, one line on stderr, exit 0, and no database made."""

    @pytest.mark.parametrize(
        ("given", "says"),
        [
            (b"{not json", "not JSON"),
            (b"[1, 2]", "not a JSON object"),
            (b"", "not JSON"),
            ({"transcript_path": "/etc/passwd", "hook_event_name": "Stop"}, "no session_id"),
            ({"session_id": 7, "transcript_path": "x"}, "no session_id"),
            ({"session_id": "a/../b", "transcript_path": "x"}, "not 1-200 printable"),
        ],
    )
    def test_input_that_is_not_the_hosts(self, tmp_path: Path, given: Any, says: str) -> None:
        assert says in refused(hook(tmp_path, "claude-code", "Stop", given))
        assert not (tmp_path / "frs.db").exists()

    def test_a_transcript_outside_the_hosts_folder_is_not_read(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        outside = tmp_path / f"{cc.session}.jsonl"
        outside.write_text(cc.path.read_text())
        line = refused(
            hook(
                tmp_path,
                "claude-code",
                "Stop",
                {**cc.hook("Stop"), "transcript_path": str(outside)},
            )
        )
        assert "is not inside" in line
        assert not (tmp_path / "frs.db").exists()

    def test_a_link_out_of_the_hosts_folder_is_not_read(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        secret = tmp_path / f"secret-{cc.session}.jsonl"
        secret.write_text(cc.path.read_text())
        cc.path.unlink()
        cc.path.symlink_to(secret)
        assert "is not inside" in refused(hook(tmp_path, "claude-code", "Stop", cc.hook("Stop")))

    def test_another_conversations_transcript_is_not_read(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        other = claude(tmp_path)
        given = {**cc.hook("Stop"), "transcript_path": str(other.path)}
        assert "not this conversation's file" in refused(
            hook(tmp_path, "claude-code", "Stop", given)
        )

    def test_a_missing_transcript(self, tmp_path: Path) -> None:
        cc = ClaudeTranscript(tmp_path)
        assert "does not exist" in refused(hook(tmp_path, "claude-code", "Stop", cc.hook("Stop")))
        assert not (tmp_path / "frs.db").exists()

    def test_an_unknown_host_or_a_missing_event(self, tmp_path: Path) -> None:
        assert "invalid choice" in refused(hook(tmp_path, "aider", "Stop", {}))
        keep = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
        done = subprocess.run(
            [sys.executable, "-m", "server.entry", "hook", "codex"],
            input=b"{}",
            capture_output=True,
            env={**keep, "HOME": str(tmp_path)},
            cwd=REPO,
            check=False,
        )
        assert done.returncode == 0
        assert done.stdout == b""
        assert b"name the EVENT" in done.stderr

    def test_a_database_that_cannot_be_opened(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        (tmp_path / "frs.db").write_text("not a database, and longer than a header " * 10)
        line = refused(hook(tmp_path, "claude-code", "Stop", cc.hook("Stop")))
        assert line.startswith("frs-mcp hook claude-code Stop: ")
        assert "Traceback" not in line


def test_a_hook_imports_no_mcp_http_or_pydantic(tmp_path: Path) -> None:
    """What a host waits for at every turn: the hook's process loads the domain, the store and
    the gateway's wire readers, nothing of the MCP or HTTP stack."""
    cc = claude(tmp_path)
    script = (
        "import io, json, sys\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[1].encode()))\n"
        "from server.entry import main\n"
        "main(['hook', 'claude-code', 'Stop', '--db', sys.argv[2]])\n"
        "heavy = ('mcp', 'httpx2', 'httpx', 'uvicorn', 'starlette', 'pydantic', 'asyncpg')\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & set(heavy))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, json.dumps(cc.hook("Stop")), str(tmp_path / "frs.db")],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path)},
        cwd=REPO,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert (tmp_path / "frs.db").exists()


class TestPostgres:
    """The hook takes `--db postgresql://…` as every command does."""

    def test_a_stop_records_into_postgres_once(self, pg_cluster: Cluster, tmp_path: Path) -> None:
        dsn = pg_cluster.create_database()
        cc = claude(tmp_path)
        for _ in range(2):
            done = hook(tmp_path, "claude-code", "Stop", cc.hook("Stop"), "--db", dsn)
            assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
        rows = pg_cluster.psql("select count(*) from messages", pg_cluster.name_of(dsn))
        assert rows == "4"

    def test_an_unreachable_server_is_one_line_without_its_password(self, tmp_path: Path) -> None:
        cc = claude(tmp_path)
        dsn = "postgresql://frs:hunter2@127.0.0.1:1/frs"
        line = refused(hook(tmp_path, "claude-code", "Stop", cc.hook("Stop"), "--db", dsn))
        assert line.startswith("frs-mcp hook claude-code Stop: ")
        assert "hunter2" not in line
