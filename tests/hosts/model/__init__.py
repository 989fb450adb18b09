"""A scripted model for host tests: the only stand-in in them (issue 19).

`ModelServer` serves the Anthropic Messages API, the OpenAI Responses and Chat Completions APIs
and the Gemini API's generateContent family (one module per wire, registered in server.WIRES)
on 127.0.0.1, plays a `Script` of `Turn`s and records every request (`Script.log`).
"""

from tests.hosts.model.script import (
    Exchange,
    Script,
    ScriptOverrun,
    Seen,
    SideRule,
    Step,
    Tool,
    ToolCall,
    ToolResult,
    Turn,
    find_int,
    find_str,
)
from tests.hosts.model.server import WIRES, ModelServer

__all__ = [
    "WIRES",
    "Exchange",
    "ModelServer",
    "Script",
    "ScriptOverrun",
    "Seen",
    "SideRule",
    "Step",
    "Tool",
    "ToolCall",
    "ToolResult",
    "Turn",
    "find_int",
    "find_str",
]
