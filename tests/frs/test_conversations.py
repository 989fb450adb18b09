"""The host conversation keys: each host's conversation found where that host puts it."""

from __future__ import annotations

import json

import pytest

from frs import conversations
from frs.conversations import HOST_KEYS, from_env, from_headers, from_meta
from frs.model import Conversation, Scope

CLAUDE = "0f6b1c2a-6a1e-4c3b-9d1e-2b7c8d9e0f1a"


class TestClaudeCode:
    def test_the_environment_names_the_conversation(self) -> None:
        found = from_env({"HOME": "/h", "CLAUDE_CODE_SESSION_ID": CLAUDE})
        assert found == Conversation("claude-code", CLAUDE)

    def test_the_gateway_finds_the_same_key_in_the_header_in_any_case(self) -> None:
        assert from_headers({"X-Claude-Code-Session-Id": CLAUDE}) == from_env(
            {"CLAUDE_CODE_SESSION_ID": CLAUDE}
        )

    def test_no_variable_no_conversation(self) -> None:
        assert from_env({"HOME": "/h"}) is None
        assert from_headers({"content-type": "application/json"}) is None


class TestCodex:
    def test_the_turn_metadata_of_a_tool_call_names_the_session(self) -> None:
        meta = {"progressToken": 3, "x-codex-turn-metadata": {"session_id": "s-1", "turn_id": "t"}}
        assert from_meta(meta) == Conversation("codex", "s-1")

    def test_turn_metadata_carried_as_its_header_text_is_read_too(self) -> None:
        meta = {"x-codex-turn-metadata": json.dumps({"session_id": "s-2"})}
        assert from_meta(meta) == Conversation("codex", "s-2")

    def test_the_gateway_reads_codexs_and_opencodes_session_headers(self) -> None:
        assert from_headers({"Session-Id": "s-3"}) == Conversation("codex", "s-3")
        assert from_headers({"X-Session-Affinity": "ses_1"}) == Conversation("opencode", "ses_1")

    @pytest.mark.parametrize(
        "meta",
        [
            None,
            {},
            {"progressToken": 1},
            {"x-codex-turn-metadata": "not json"},
            {"x-codex-turn-metadata": {"turn_id": "t"}},
            {"x-codex-turn-metadata": {"session_id": 7}},
            {"x-codex-turn-metadata": ["s-1"]},
        ],
    )
    def test_anything_else_in_meta_names_no_conversation(self, meta: object) -> None:
        assert from_meta(meta) is None  # type: ignore[arg-type]


class TestValues:
    @pytest.mark.parametrize("value", ["", "   ", "a\nb", "tab\there", "x" * 201, "\u202e"])
    def test_a_value_that_cannot_be_a_key_is_ignored(self, value: str) -> None:
        assert from_env({"CLAUDE_CODE_SESSION_ID": value}) is None

    def test_surrounding_blanks_are_trimmed_and_200_characters_are_allowed(self) -> None:
        assert from_env({"CLAUDE_CODE_SESSION_ID": f" {'x' * 200}\n"}) == Conversation(
            "claude-code", "x" * 200
        )

    def test_every_host_key_has_an_interface_and_somewhere_to_look(self) -> None:
        for key in HOST_KEYS:
            assert key.interface
            assert key.env or key.header or key.meta
            assert key.header is None or key.header == key.header.lower()
        assert "CLAUDE_CODE_SESSION_ID" in conversations.env_names()


class TestScope:
    def test_a_conversation_narrows_the_scope_to_a_key_of_its_own(self) -> None:
        base = Scope("local", "claude-code@file:///work/p", "process")
        one = base.in_conversation(Conversation("claude-code", "A"))
        two = base.in_conversation(Conversation("claude-code", "B"))
        assert one.client == "claude-code@file:///work/p#claude-code:A"
        assert one.client != two.client
        assert (one.tenant, one.connection) == (base.tenant, base.connection)
        assert one.conversation == Conversation("claude-code", "A")
