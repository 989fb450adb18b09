"""The scripted Responses wire answers a thinking turn with a reasoning item and checks the
reasoning items sent back as the API does: known-bad requests are refused with its 400,
known-good ones pass."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.hosts.model import ModelServer, Script, Turn
from tests.hosts.model.reasoning import check, item, opened, seal
from tests.hosts.test_model import events, post

pytestmark = pytest.mark.hosts

TOOLS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]
STATELESS = {"store": False, "include": ["reasoning.encrypted_content"]}


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def thought(text: str) -> dict[str, Any]:
    return {"type": "reasoning", "id": f"rs_{len(text)}", "summary": [], **_sealed(text)}


def _sealed(text: str) -> dict[str, str]:
    return {"encrypted_content": seal(text)}


def call(call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": "exec_command",
        "arguments": '{"cmd": "ls"}',
    }


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "a.py"}


LOOP = [
    user("Fix the race."),
    thought("Look first."),
    call("c1"),
    output("c1"),
    thought("Now read a.py."),
    call("c2"),
    output("c2"),
]


def body(items: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "m", "tools": TOOLS, "input": items, **STATELESS, **extra}


class TestValid:
    def test_items_sent_back_as_they_came_pass(self):
        assert check(body(LOOP)) is None

    def test_older_turns_may_go_with_their_calls(self):
        assert check(body([LOOP[0], *LOOP[4:]])) is None

    def test_a_reasoning_item_before_an_answer_passes(self):
        said = {"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}
        assert check(body([user("Hi."), thought("Greet back."), said])) is None

    def test_a_stored_conversation_may_send_an_item_by_id_alone(self):
        bare = {"type": "reasoning", "id": "rs_1", "summary": []}
        assert check(body([user("Go."), bare, call("c1")], store=True, include=[])) is None


class TestRefused:
    def test_changed_encrypted_content_is_refused(self):
        items = json.loads(json.dumps(LOOP))
        items[4]["encrypted_content"] = items[4]["encrypted_content"][:-6] + "AAAAAA"
        refused = check(body(items))
        assert refused is not None
        assert refused.message == (
            "The encrypted content for item rs_14 could not be verified. Reason: Encrypted "
            "content could not be decrypted or parsed."
        )
        assert refused.code == "invalid_encrypted_content"
        assert refused.param is None

    def test_content_the_model_did_not_write_is_refused(self):
        items = [user("Go."), {**thought("x"), "encrypted_content": "gAAAA-other"}, call("c1")]
        refused = check(body(items))
        assert refused is not None
        assert refused.code == "invalid_encrypted_content"

    def test_a_reasoning_item_without_its_following_item_is_refused(self):
        # Its call went (a proxy cut the exchange in two), the reasoning stayed.
        items = [LOOP[0], LOOP[1], LOOP[4], LOOP[5], LOOP[6]]
        refused = check(body(items))
        assert refused is not None
        assert refused.message == (
            "Item 'rs_11' of type 'reasoning' was provided without its required following item."
        )
        assert refused.param == "input"

    def test_a_reasoning_item_last_is_refused(self):
        refused = check(body([*LOOP, thought("Then what.")]))
        assert refused is not None
        assert "without its required following item" in refused.message

    def test_a_stateless_request_cannot_send_an_item_by_id_alone(self):
        bare = {"type": "reasoning", "id": "rs_1", "summary": []}
        refused = check(body([user("Go."), bare, call("c1")]))
        assert refused is not None
        assert refused.message.startswith("Item with id 'rs_1' not found.")


class TestWire:
    def test_a_thinking_turn_streams_its_reasoning_first_and_takes_it_back(
        self, model_server: ModelServer
    ):
        turns = [Turn("", (), thinking="Look first.") for _ in range(2)]
        script = model_server.play(Script(turns))
        url = f"{model_server.url}/v1/responses"
        first = body([user("Fix the race.")], stream=True)
        status, raw = post(url, first)
        assert status == 200
        done = [data["item"] for name, data in events(raw) if name == "response.output_item.done"]
        added = [data["item"] for name, data in events(raw) if name == "response.output_item.added"]
        assert [i["type"] for i in done] == ["reasoning"]
        assert "encrypted_content" not in added[0]  # whole only once the item is done
        assert opened(done[0]["encrypted_content"]) == "Look first."
        assert done[0]["summary"] == []
        # Sent back as it came, it passes; changed, the API's 400 comes back.
        said = {"type": "message", "role": "assistant", "content": [{"type": "output_text"}]}
        again = body([user("Fix the race."), done[0], said, user("Go on.")], stream=True)
        assert post(url, again)[0] == 200
        changed = json.loads(json.dumps(again))
        changed["input"][1]["encrypted_content"] += "x"
        status, raw = post(url, changed)
        assert status == 400
        error = json.loads(raw)["error"]
        assert error["code"] == "invalid_encrypted_content"
        assert script.log[-1].error == error["message"]
        assert script.played == 2  # the refused request used no step

    def test_a_summary_comes_when_asked_and_no_encrypted_content_when_stored(self):
        asked = {"model": "m", "input": [], "reasoning": {"summary": "auto"}, "store": True}
        found = item(asked, "Look first.")
        assert found["summary"] == [{"type": "summary_text", "text": "Look first."}]
        assert "encrypted_content" not in found
