"""How each host says, in what it sends its model, that it is compacting or has compacted.

A host that runs out of room asks its model for a summary of the conversation (a request of
its own: "compaction request"), then replaces the history it sends with that summary and a few
of its newest turns. Nothing on the wire names either step, so the gateway knows them by the
words each host writes, observed on the pinned versions the tests drive:

- Claude Code 2.1.332: the compaction request is a normal call whose last user message gets a
  text block starting `CRITICAL: Respond with TEXT ONLY.` and asking to "create a detailed
  summary of the conversation so far"; after it, the first user message begins `This session
  is being continued from a previous conversation that ran out of context.`;
- Codex CLI 0.171.0: its own summarising request ends with a user message starting `You are
  performing a CONTEXT CHECKPOINT COMPACTION` (or, with a provider named OpenAI, with a
  `compaction_trigger` item, answered by an encrypted `compaction` item); after it, a user
  message starts `Another language model started to solve this problem` (or the history
  carries that `compaction` item);
- OpenCode 1.18.33: the summarising request's system prompt starts `You are a context
  summarization agent` (the history goes as one text); after it, the conversation begins
  with the user's `What did we do so far?` answered by the summary.

The wire modules find these in a request (`asks_to_summarise`, `is_summary`); the recorder
records the summary as the thread's compaction entry and goes on recording after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from frs.wire.requests import WireMessage

#: The words that open a host's request to its model for a summary of the conversation.
SUMMARY_REQUESTS = (
    "CRITICAL: Respond with TEXT ONLY.",  # Claude Code
    "You are performing a CONTEXT CHECKPOINT COMPACTION",  # Codex
    "You are a context summarization agent",  # OpenCode (its system prompt)
)
#: The words that open the message holding a host's summary in the history it sends after.
SUMMARIES = (
    "This session is being continued from a previous conversation that ran out of context.",
    "Another language model started to solve this problem",  # Codex
)
#: OpenCode's question before its summary: the summary is the answer that follows it.
OPENCODE_QUESTION = "What did we do so far?"
#: The compaction entry's text when the host's summary cannot be read (an encrypted item).
SEALED = (
    "[The host compacted the conversation here. Its summary is an encrypted compaction item "
    "the gateway cannot read; the messages before this one are no longer sent to the model.]"
)


def asks_to_summarise(text: str) -> bool:
    """Whether a text is a host's instruction to its model to summarise the conversation."""
    return text.lstrip().startswith(SUMMARY_REQUESTS)


def is_summary(text: str) -> bool:
    """Whether a text (one block of a message: Claude Code may put a `<system-reminder>`
    block first) is a host's summary standing for the history it compacted."""
    return text.lstrip().startswith(SUMMARIES)


@dataclass(frozen=True, slots=True)
class Found:
    """What a request says of a host's compaction (`frs.wire.requests.WireRequest`'s fields)."""

    summarise: bool = False
    instruction: int | None = None
    summary: int | None = None


def find(messages: Sequence[WireMessage]) -> Found:
    """A host's compaction in a request's messages: whether it asks for a summary (and which
    message holds the ask), and which message holds the summary it sent after one. Only the
    ends of the request are read (a long conversation's middle never holds either), so this
    costs the same whatever the length."""
    talk = [i for i, m in enumerate(messages) if m.role != "system"]
    instruction = None
    if talk and messages[talk[-1]].role == "user" and _says(messages[talk[-1]], asks_to_summarise):
        instruction = talk[-1]
    ends = [*messages[:3], *messages[-2:]]  # a system prompt first, a trigger item last
    summarise = instruction is not None or any(
        m.role == "system" and (_says(m, asks_to_summarise) or _holds(m, "[compaction_trigger]"))
        for m in ends
    )
    # The summary comes before the model's first message after it (OpenCode's is that
    # message, answering its question).
    summary = None
    for at, i in enumerate(talk):
        message = messages[i]
        if message.role == "assistant":
            break
        if _says(message, is_summary):
            summary = i
            break
        following = talk[at + 1] if at + 1 < len(talk) else None
        if (
            following is not None
            and messages[following].role == "assistant"
            and any(
                b.kind == "text" and b.text.strip() == OPENCODE_QUESTION for b in message.blocks
            )
        ):
            summary = following
            break
    if summary is None:
        # An encrypted compaction item (Codex with an OpenAI provider) stands among the first
        # items, before the model's first message after it.
        first = next((i for i in talk if messages[i].role == "assistant"), len(messages))
        summary = next((i for i in range(first) if _holds(messages[i], "[compaction]")), None)
    return Found(summarise, instruction, summary)


def _says(message: WireMessage, test: Callable[[str], bool]) -> bool:
    return any(block.kind in ("text", "other") and test(block.text) for block in message.blocks)


def _holds(message: WireMessage, text: str) -> bool:
    return any(block.kind == "compaction" and block.text == text for block in message.blocks)
