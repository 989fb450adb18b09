"""The `frs_distill` prompt: when and how to distill a thread."""

from __future__ import annotations

from typing import Any

from mcp.server import MCPServer

DISTILL = """\
Distill your FRS thread{target}.

1. Call frs_view_thread and note the revision on its last line.
2. Find stretches you no longer need verbatim: a finished investigation, long tool output whose
   result you already used, retries that led nowhere, a resolved sub-question.
   Keep verbatim what is still in play: the task, the user's latest requests, unresolved errors.
3. Squash them in one call, all named as in the view you read:
   frs_compress_range(ranges=[{{from, to, summary}}, ...], expected_revision=<that revision>)
   (or frs_compress_last(count, summary) for the newest). Each call makes one new revision:
   for a further call, pass the revision its answer gave. Write each summary as facts you may
   need:
   - decisions taken and why;
   - exact numbers, versions, error messages, file names and paths, commands that worked;
   - open questions and what is left to try.
   Shorter than the original, but never vague ("looked at files" loses everything).
4. A range may not separate a tool call from its result; the error names a range that works.
5. Nothing is lost: get_alias(SQ.n) shows the originals, frs_restore(SQ.n) undoes a squash.
{goal}"""


def register(mcp: MCPServer[Any]) -> None:
    @mcp.prompt(title="Distill the reasoning thread")
    def frs_distill(session_id: str = "", focus: str = "") -> str:
        """When and how to squash a thread into summaries that keep what matters."""
        target = f" (session {session_id})" if session_id else ""
        goal = f"\nFocus on what matters for: {focus}\n" if focus else ""
        return DISTILL.format(target=target, goal=goal)
