"""Each host's transcript read into the gateway's units: the conversation and nothing else, each
message keyed as the gateway keys it when the host sends the same message to a model."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from frs.wire.matching import Unit, units_of
from server.cli.hooks import claude_code, codex, gemini_cli, opencode
from server.cli.hooks.transcripts import Deadline
from server.gateway import anthropic, chat, responses
from tests.server.hooks.transcripts import (
    ClaudeTranscript,
    CodexRollout,
    GeminiChat,
    OpenCodeStore,
    message,
    reasoning_item,
    text,
    thinking,
    tool_use,
)


def said(units: list[Unit]) -> list[tuple[str, str]]:
    """(role, words or the calls' names) of each unit."""
    out: list[tuple[str, str]] = []
    for unit in units:
        calls = ",".join(call.name for call in unit.new.tool_calls)
        out.append((unit.new.role, unit.new.content + (f" [{calls}]" if calls else "")))
    return out


def opencode_units(store: OpenCodeStore) -> list[Unit]:
    return opencode.units(opencode.rows(store.path, store.session, Deadline(10)))


def claude_session(home: Path) -> ClaudeTranscript:
    cc = ClaudeTranscript(home)
    cc.bookkeeping()
    cc.prompt("Fix the failing test in src/app.py")
    cc.answer(
        "msg_1",
        thinking("the test first", "sig-1"),
        text("Running the tests."),
        tool_use("toolu_1", "Bash", command="pytest -q tests/test_app.py"),
    )
    cc.bookkeeping()
    cc.result("toolu_1", "FAILED tests/test_app.py::test_sum - AssertionError", error=True)
    cc.answer("msg_2", text("Reading it."), tool_use("toolu_2", "Read", file_path="src/app.py"))
    cc.result("toolu_2", [{"type": "text", "text": "def total(xs): return sum(xs) + 1"}])
    return cc


class TestClaudeCode:
    def test_an_answer_written_a_block_a_line_is_one_message_with_its_thinking(
        self, tmp_path: Path
    ) -> None:
        units = claude_code.units(claude_session(tmp_path).lines)
        assert said(units) == [
            ("user", "Fix the failing test in src/app.py"),
            ("assistant", "Running the tests. [Bash]"),
            ("tool", "FAILED tests/test_app.py::test_sum - AssertionError"),
            ("assistant", "Reading it. [Read]"),
            ("tool", "def total(xs): return sum(xs) + 1"),
        ]
        assert [t.content for t in units[1].thinking] == ["the test first"]
        assert units[1].new.tool_calls[0].arguments == '{"command":"pytest -q tests/test_app.py"}'

    def test_the_keys_are_the_gateways_for_the_same_messages(self, tmp_path: Path) -> None:
        """The request Claude Code sends after this transcript, read by the gateway: every
        answer and result has the key the hook gave it (the prompt differs: Claude Code sends it
        with its reminders around it)."""
        cc = claude_session(tmp_path)
        request = {
            "model": "claude-opus-5-5",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        text("<system-reminder>x</system-reminder>"),
                        text("Fix the failing test in src/app.py"),
                    ],
                },
                {"role": "system", "content": "# Environment"},
                {
                    "role": "assistant",
                    "content": [
                        thinking("the test first", "sig-1"),
                        text("Running the tests."),
                        tool_use("toolu_1", "Bash", command="pytest -q tests/test_app.py"),
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": "toolu_1",
                            "type": "tool_result",
                            "content": "FAILED tests/test_app.py::test_sum - AssertionError",
                            "is_error": True,
                            "cache_control": {"type": "ephemeral"},
                        }
                    ],
                },
                {
                    "role": "assistant",
                    "content": [
                        text("Reading it."),
                        tool_use("toolu_2", "Read", file_path="src/app.py"),
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": "toolu_2",
                            "type": "tool_result",
                            "content": [text("def total(xs): return sum(xs) + 1")],
                        }
                    ],
                },
            ],
        }
        gateway = units_of(anthropic.WIRE.parse(json.dumps(request), {}))
        hook = claude_code.units(cc.lines)
        assert [u.key for u in hook[1:]] == [u.key for u in gateway[1:]]
        assert hook[0].key != gateway[0].key

    def test_a_compaction_its_summary_and_claude_codes_own_lines_are_not_the_conversation(
        self, tmp_path: Path
    ) -> None:
        cc = claude_session(tmp_path)
        cc.compaction("The user asked to fix a test.")
        cc.prompt("<command-name>/compact</command-name>")
        cc._line("user", message={"role": "user", "content": "caveat"}, isMeta=True)
        cc.answer("msg_err", text("API Error: 500"))
        cc.lines[-1] = cc.lines[-1].replace('"claude-opus-5-5"', '"<synthetic>"')
        cc._line("user", message={"role": "user", "content": "side"}, isSidechain=True)
        cc.prompt("Now run them all")
        units = claude_code.units(cc.lines)
        assert [u.new.content for u in units][-2:] == [
            "def total(xs): return sum(xs) + 1",
            "Now run them all",
        ]
        assert not [u for u in units if "continued" in u.new.content or "/compact" in u.new.content]

    def test_a_subagents_own_transcript_is_read_whole(self, tmp_path: Path) -> None:
        cc = ClaudeTranscript(tmp_path)
        cc._line("user", message={"role": "user", "content": "Find the config"}, isSidechain=True)
        cc.answer("msg_a", text("It is config.toml."))
        assert said(claude_code.units(cc.lines, main=False)) == [
            ("user", "Find the config"),
            ("assistant", "It is config.toml."),
        ]
        assert said(claude_code.units(cc.lines)) == [("assistant", "It is config.toml.")]


class TestCodex:
    def test_codexs_own_messages_and_a_local_compactions_answer_are_left_out(
        self, tmp_path: Path
    ) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Make the build pass")
        rollout.call("call_1", "make", "error: missing header foo.h", reasoning="build it")
        rollout.compacted("SUMMARY: make failed on foo.h")
        rollout.call("call_2", "make", "ok")
        rollout.say("Built.", reasoning="done")
        assert said(codex.units(rollout.lines)) == [
            ("user", "Make the build pass"),
            ("assistant", " [exec_command]"),
            ("tool", "error: missing header foo.h"),
            ("assistant", " [exec_command]"),
            ("tool", "ok"),
            ("assistant", "Built."),
        ]

    def test_a_remote_compaction_leaves_the_answer_before_it(self, tmp_path: Path) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Explain the build")
        rollout.say("It uses make.")
        rollout.compacted("", local=False)
        assert said(codex.units(rollout.lines))[-1] == ("assistant", "It uses make.")

    def test_the_keys_are_the_gateways_for_the_same_items(self, tmp_path: Path) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Make the build pass")
        rollout.call("call_1", "make", "error: missing header foo.h", reasoning="build it")
        sent = [json.loads(line)["payload"] for line in rollout.lines]
        request = {"model": "gpt-5.5", "input": [p for p in sent if "type" in p]}
        gateway = {u.key for u in units_of(responses.WIRE.parse(json.dumps(request), {}))}
        hook = codex.units(rollout.lines)
        assert {u.key for u in hook} <= gateway


class TestGeminiCli:
    def test_records_are_read_once_by_id_and_the_sets_are_not_read(self, tmp_path: Path) -> None:
        chat_file = GeminiChat(tmp_path)
        chat_file.header()
        chat_file.record("u1", "user", [{"text": "List the files"}])
        chat_file.record("g1", "gemini", "")
        call = {"id": "ls_1", "name": "list_directory", "args": {"dir_path": "."}}
        chat_file.record("g1", "gemini", "", toolCalls=[call])
        response = {"id": "ls_1", "name": "list_directory", "response": {"output": "a.py"}}
        chat_file.record("r1", "user", [{"functionResponse": response}])
        snapshot = [{"text": "<state_snapshot>x</state_snapshot>"}]
        chat_file.lines.append(
            json.dumps({"$set": {"messages": [{"id": "s", "type": "user", "content": snapshot}]}})
        )
        # After a compression Gemini CLI writes the next answer into the acknowledgement's
        # record, which it made for the snapshot.
        ack = "Got it. Thanks for the additional context!"
        chat_file.record("ack", "gemini", [{"text": ack}, {"text": "One file."}])
        assert said(gemini_cli.units(chat_file.lines)) == [
            ("user", "List the files"),
            ("assistant", " [list_directory]"),
            ("tool", "a.py"),
            ("assistant", "One file."),
        ]

    def test_before_model_rewrites_the_snapshot_message_and_nothing_after_it(self) -> None:
        given = {
            "session_id": "6b025e69-33f7-488f-a955-3eacb6f5b0c8",
            "llm_request": {
                "messages": [
                    {
                        "role": "user",
                        "content": "<session_context>x<state_snapshot>S</state_snapshot>",
                    },
                    {"role": "model", "content": "Got it."},
                    {"role": "user", "content": "Go on"},
                ]
            },
        }
        job = gemini_cli.HOST.job("BeforeModel", given, {})
        assert job is not None
        assert job.read is None
        assert job.answer is not None
        answer = json.loads(job.answer("DIGEST"))["hookSpecificOutput"]
        assert answer["hookEventName"] == "BeforeModel"
        assert answer["llm_request"]["messages"] == [
            {
                "role": "user",
                "content": "<session_context>x<state_snapshot>S</state_snapshot>\n\nDIGEST",
            }
        ]

    def test_before_model_without_a_snapshot_is_no_job(self) -> None:
        given = {
            "session_id": "s1",
            "llm_request": {"messages": [{"role": "user", "content": "hi"}]},
        }
        assert gemini_cli.HOST.job("BeforeModel", given, {}) is None


class TestOpenCode:
    def test_the_store_is_read_as_the_chat_messages_opencode_sends(self, tmp_path: Path) -> None:
        store = OpenCodeStore(tmp_path)
        store.user('"Run the tests"')
        store.step("Running.", ("call_1", "bash", {"command": "npm test"}, "1 failing"))
        store.compaction("OC-SUMMARY")
        store.step("Fixed.")
        rows = opencode.rows(store.path, store.session, Deadline(10))
        assert said(opencode.units(rows)) == [
            ("user", '"Run the tests"'),
            ("assistant", "Running. [bash]"),
            ("tool", "1 failing"),
            ("assistant", "Fixed."),
        ]
        assert opencode.compacted(store.path, store.session)

    def test_the_keys_are_the_gateways_for_the_same_messages(self, tmp_path: Path) -> None:
        store = OpenCodeStore(tmp_path)
        store.user("Run the tests")
        store.step("Running.", ("call_1", "bash", {"command": "npm test"}, "1 failing"))
        rows = opencode.rows(store.path, store.session, Deadline(10))
        request = {
            "model": "m",
            "messages": [
                {"role": "system", "content": "You are OpenCode"},
                *opencode.messages(rows),
            ],
        }
        gateway = [u.key for u in units_of(chat.WIRE.parse(json.dumps(request), {}))]
        assert [u.key for u in opencode.units(rows)] == gateway

    def test_reading_writes_nothing_to_opencodes_store(self, tmp_path: Path) -> None:
        """The file's bytes stay as they were; a reader of a WAL database may leave the
        write-ahead log beside it, empty, as any reader does."""
        store = OpenCodeStore(tmp_path)
        store.user("Run the tests")
        before = store.path.read_bytes()
        opencode.rows(store.path, store.session, Deadline(10))
        opencode.compacted(store.path, store.session)
        assert store.path.read_bytes() == before
        wal = store.path.with_name(store.path.name + "-wal")
        assert not wal.exists() or wal.stat().st_size == 0
        with sqlite3.connect(store.path) as db:
            assert db.execute("select count(*) from message").fetchone() == (1,)
        db.close()


def test_codex_reasoning_stays_with_its_call(tmp_path: Path) -> None:
    rollout = CodexRollout(tmp_path)
    rollout.start("Go")
    rollout.item(reasoning_item("plan"))
    rollout.item(message("assistant", "Planning."))
    units = codex.units(rollout.lines)
    assert [t.content for t in units[-1].thinking] == ["plan"]


class TestALaterImportKeepsTheKeysOfAnEarlierOne:
    """Whatever an import read is read under the same keys by every later one: otherwise the
    later one would record it again, under its new key."""

    def test_claude_code_at_every_line_before_a_flush(self, tmp_path: Path) -> None:
        cc = claude_session(tmp_path)
        cc.answer(
            "msg_3",
            thinking("two calls", "sig-3"),
            text("Checking both."),
            tool_use("toolu_3", "Bash", command="git diff"),
            tool_use("toolu_4", "Bash", command="git status"),
        )
        cc.result("toolu_3", "diff --git a/src/app.py")
        cc.result("toolu_4", "On branch main")
        whole = {u.key for u in claude_code.units(cc.lines)}
        for cut in range(len(cc.lines) + 1):
            early = claude_code.units(cc.lines[:cut], flushed=False)
            assert {u.key for u in early} <= whole, cut

    def test_an_answer_cut_short_waits_for_the_flush(self, tmp_path: Path) -> None:
        cc = claude_session(tmp_path)
        cc.answer("msg_3", text("Checking."), tool_use("toolu_3", "Bash", command="git diff"))
        cut = cc.lines[:-1]  # its tool_use line not written yet
        assert said(claude_code.units(cut, flushed=False))[-1] == (
            "tool",
            "def total(xs): return sum(xs) + 1",
        )
        assert said(claude_code.units(cc.lines))[-1] == ("assistant", "Checking. [Bash]")

    def test_codex_across_a_compaction(self, tmp_path: Path) -> None:
        rollout = CodexRollout(tmp_path)
        rollout.start("Make the build pass")
        rollout.say("Looking.")
        before = {u.key for u in codex.units(rollout.lines)}
        rollout.compacted("SUMMARY")
        rollout.say("Still looking.")
        after = codex.units(rollout.lines)
        assert before <= {u.key for u in after}
        assert said(after)[-2:] == [("assistant", "Looking."), ("assistant", "Still looking.")]

    def test_opencode_across_a_compaction(self, tmp_path: Path) -> None:
        store = OpenCodeStore(tmp_path)
        store.user("Explain the build")
        store.step("It uses make.")
        before = {
            u.key for u in opencode.units(opencode.rows(store.path, store.session, Deadline(10)))
        }
        store.compaction("OC-SUMMARY")
        store.step("And a Makefile.")
        after = opencode.units(opencode.rows(store.path, store.session, Deadline(10)))
        assert before <= {u.key for u in after}
        assert said(after)[-2:] == [
            ("assistant", "It uses make."),
            ("assistant", "And a Makefile."),
        ]

    def test_gemini_two_answers_in_a_row(self, tmp_path: Path) -> None:
        chat_file = GeminiChat(tmp_path)
        chat_file.header()
        chat_file.record("u1", "user", [{"text": "Explain the build"}])
        chat_file.record("g1", "gemini", "It uses make.")
        before = {u.key for u in gemini_cli.units(chat_file.lines)}
        chat_file.record("g2", "gemini", "And a Makefile.")
        after = gemini_cli.units(chat_file.lines)
        assert before <= {u.key for u in after}
        assert len(after) == 3
