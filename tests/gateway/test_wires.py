"""Each provider's wire is a `WireFormat`: the methods the gateway core calls, the interface a
conversation it identifies by content is stored under (stored data: it must not change), and
only the Messages wire binds stale thinking."""

from __future__ import annotations

import json

import pytest

from frs.wire.matching import fingerprint, units_of
from server.gateway import anthropic, chat, responses
from server.gateway.wires import WireFormat

HI = [{"role": "user", "content": "fix the flaky test"}]
BODIES = {
    "anthropic": {"model": "m", "messages": HI},
    "openai-responses": {"model": "m", "input": [{"type": "message", **HI[0]}]},
    "openai-chat": {"model": "m", "messages": HI},
}
WIRES = [anthropic.WIRE, responses.WIRE, chat.WIRE]


class TestWireFormats:
    @pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
    def test_a_conversation_named_by_no_header_is_kept_under_the_wires_interface(
        self, wire: WireFormat
    ) -> None:
        units = units_of(wire.parse(json.dumps(BODIES[wire.name]), {}))
        found = fingerprint(units)
        assert found is not None
        assert wire.conversation_of({}, units) == (wire.name, found)

    @pytest.mark.parametrize("wire", WIRES, ids=lambda w: w.name)
    def test_a_header_names_the_conversation_before_any_content(self, wire: WireFormat) -> None:
        units = units_of(wire.parse(json.dumps(BODIES[wire.name]), {}))
        named = wire.named({"session-id": "s-1"})
        assert named is not None
        assert wire.conversation_of({"session-id": "s-1"}, units) == named

    def test_the_interfaces_stored_conversations_are_kept_under_do_not_change(self) -> None:
        assert [w.name for w in WIRES] == ["anthropic", "openai-responses", "openai-chat"]
        assert len({w.path for w in WIRES}) == 3

    def test_only_the_messages_wire_asks_the_api_to_drop_stale_thinking(self) -> None:
        assert anthropic.WIRE.bind is not None
        assert anthropic.WIRE.beta == anthropic.BINDING_BETA
        assert (responses.WIRE.bind, chat.WIRE.bind) == (None, None)
        assert (responses.WIRE.beta, chat.WIRE.beta) == (None, None)

    def test_a_wire_must_say_how_to_read_and_render(self) -> None:
        class Half(WireFormat):
            name = "half"
            path = "/v1/half"

        with pytest.raises(TypeError, match="abstract"):
            Half()  # type: ignore[abstract]
