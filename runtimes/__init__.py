"""runtimes: FRS in the agent frameworks' own idioms, each adapter an optional extra.

- `runtimes.openai_agents` (``frs-mcp[openai-agents]``): `FRSSession`, the OpenAI Agents SDK's
  `Session`, built like its `SQLiteSession(session_id, db_path)`, and the FRS tools as function
  tools.
- `runtimes.pydantic_ai` (``frs-mcp[pydantic-ai]``): a history processor and the FRS tools as a
  toolset.
- `runtimes.core`: what they share (a conversation kept as one FRS session, the tool
  operations); it needs no framework.

Imports go `runtimes -> storage -> frs`; nothing of ours imports `runtimes`.
"""

from runtimes.core import Conversation, FrsTools, summary_text
from runtimes.stores import SharedStore, open_store

__all__ = ["Conversation", "FrsTools", "SharedStore", "open_store", "summary_text"]

# server/origin.py checks this line to tell our package from another of the same name.
__distribution__ = "frs-mcp"
