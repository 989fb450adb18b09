"""Preserved thinking as the Anthropic API documents it: what the tests' upstream signs and checks.

Every thinking block the scripted model answers with is signed over its prefix, as the API's
are: the top-level `system`, `tools` and every message before the block, compared by value
(JSON formatting, key order and `cache_control` markers do not count; earlier thinking blocks
are not part of it), plus the thinking block that came before it in the request, so a block
removed from the middle shows as a gap (a block follows the last block before it that passed,
so what was written after a dropped block stays valid). Each request that sends thinking back
is checked (`check`) the way the documentation says:

- a block whose text was changed, or whose signature is not one the model wrote, is refused
  with a 400 that no setting lifts;
- a block whose prefix changed since it was produced, or that follows a gap, fails the prefix
  check, and so does every thinking block after it; by default the request is refused with
  the documented 400, and with `thinking.block_binding.prefix_mismatch_behavior: "drop_block"`
  (which needs the `thinking-binding-controls-2026-08-01` beta header, or the request is
  refused for an extra input) the failing blocks are dropped and listed as
  `input_transformations`;
- blocks removed from the start or the end, or all of them, are fine.

With `thinking.display: "omitted"` (Claude Code's default for its default model) the model
answers with an empty `thinking` text and the signature carries the reasoning: the block
streams its signature and nothing else, is sent back empty, and text a client puts in it is
ignored rather than refused (https://platform.claude.com/docs/en/build-with-claude/thinking,
"display"; preserved-thinking, "Send assistant turns back exactly as returned").

Pages: https://platform.claude.com/docs/en/build-with-claude/preserved-thinking ("What counts
as an edit", "Libraries, proxies, and gateways", the error texts),
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks and
https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/fix-bound-to-a-different-conversation.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The beta the binding controls and `input_transformations` need.
BETA = "thinking-binding-controls-2026-08-01"
_THINKING = ("thinking", "redacted_thinking")
_SIGNED = "frs-test-sig."


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _plain(value: Any) -> Any:
    """`value` without cache markers and without thinking blocks, and every message's content
    as a list of blocks (a string is one text block): what a prefix compares. Claude Code sends
    a role-system message as one text block while it holds the cache marker and as a string
    after, on every request; its thinking stays valid against the API, so the API compares
    the two as one value."""
    if isinstance(value, dict):
        if isinstance(value.get("content"), str) and "role" in value:
            value = {**value, "content": [{"type": "text", "text": value["content"]}]}
        return {k: _plain(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [
            _plain(v) for v in value if not (isinstance(v, dict) and v.get("type") in _THINKING)
        ]
    return value


def _content(message: Any) -> list[Any]:
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return content if isinstance(content, list) else []


def prefix_digest(body: dict[str, Any], message: int, block: int) -> str:
    """The digest of what comes before block `block` of message `message` (0-based): system,
    tools, the messages before it and the blocks before it in its own message, by value."""
    messages = body.get("messages") or []
    own = _content(messages[message])[:block] if message < len(messages) else []
    system = body.get("system")
    if isinstance(system, str):
        system = [{"type": "text", "text": system}]
    before = {"system": system, "tools": body.get("tools"), "m": messages[:message]}
    return _digest(_plain({**before, "own": own}))


def _text_of(block: dict[str, Any]) -> str:
    return str(block.get("thinking") if block.get("type") == "thinking" else block.get("data"))


def _signature_of(block: dict[str, Any]) -> str:
    """What carries a block's signature: `signature`, or a redacted block's `data`."""
    if block.get("type") == "redacted_thinking":
        return str(block.get("data") or "")
    return str(block.get("signature") or "")


def sign(prefix: str, previous: str | None, text: str, omitted: bool = False) -> str:
    """The signature the scripted model gives a thinking block: its prefix's digest, the
    signature of the thinking block before it (None: none), and its text's digest; an
    `omitted` block's text is not shown, and the signature says so."""
    payload: dict[str, Any] = {"p": prefix, "prev": _link(previous), "t": _digest(text)}
    if omitted:
        payload["o"] = 1
    return _SIGNED + base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


def _link(signature: str | None) -> str:
    return "" if signature is None else hashlib.sha256(signature.encode()).hexdigest()[:32]


def _read(signature: str) -> dict[str, Any] | None:
    if not signature.startswith(_SIGNED):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(signature[len(_SIGNED) :]))
    except ValueError:
        return None
    return payload if isinstance(payload, dict) else None


def blocks_of(body: dict[str, Any]) -> list[tuple[int, int, dict[str, Any]]]:
    """Every thinking block of the request: (message index, block index, block)."""
    return [
        (i, j, block)
        for i, message in enumerate(body.get("messages") or [])
        for j, block in enumerate(_content(message))
        if isinstance(block, dict) and block.get("type") in _THINKING
    ]


def betas(headers: Iterable[tuple[str, str]]) -> set[str]:
    """The `anthropic-beta` values of a request (comma-separated, any number of headers)."""
    return {
        part.strip()
        for name, value in headers
        if name.lower() == "anthropic-beta"
        for part in value.split(",")
        if part.strip()
    }


@dataclass(frozen=True, slots=True)
class Checked:
    """What the API does with a request's thinking: refuse it (`error`, the 400's message),
    or take it with some blocks dropped (`dropped`, as (message, block) indices, and the
    `input_transformations` the answer reports when the beta header came)."""

    error: str | None = None
    dropped: tuple[tuple[int, int], ...] = ()
    transformations: tuple[dict[str, str], ...] | None = None
    #: The signature of the last thinking block that passed: what a new block follows.
    last: str | None = None
    failing: tuple[tuple[int, int], ...] = field(default=())


def check(body: dict[str, Any], headers: Sequence[tuple[str, str]]) -> Checked:
    """The documented checks on a request's thinking blocks (see the module docstring)."""
    has_beta = BETA in betas(headers)
    found = body.get("thinking")
    thinking: dict[str, Any] = found if isinstance(found, dict) else {}
    binding = thinking.get("block_binding")
    if binding is not None and not has_beta:
        kind = thinking.get("type", "adaptive")
        return Checked(error=f"thinking.{kind}.block_binding: Extra inputs are not permitted")
    behavior = "error"
    if isinstance(binding, dict):
        behavior = str(binding.get("prefix_mismatch_behavior", "error"))
        if behavior not in ("error", "drop_block"):
            return Checked(
                error="thinking.block_binding.prefix_mismatch_behavior: Input should be "
                "'error' or 'drop_block'"
            )
    failing: list[tuple[int, int]] = []
    valid: str | None = None  # the signature of the last block that passed
    for i, j, block in blocks_of(body):
        where = f"messages.{i}.content.{j}"
        signature = _signature_of(block)
        signed = _read(signature)
        # An omitted block's text was never shown: what a client put there is ignored.
        if signed is None or not (signed.get("o") or signed.get("t") == _digest(_text_of(block))):
            return Checked(error=f"{where}: Invalid `signature` in `{block.get('type')}` block.")
        # A block follows the last valid block before it, as it did when it was written; with
        # none before it, blocks were removed from the start, which is allowed.
        follows = valid is None or signed.get("prev") == _link(valid)
        if signed.get("p") == prefix_digest(body, i, j) and follows:
            valid = signature
        else:
            failing.append((i, j))
    if failing and behavior == "error":
        i, j = failing[0]
        message = (
            f"messages.{i}.content.{j}: Invalid `signature` in `thinking` block. The block is "
            "bound to a different conversation. Remove the block, or set "
            '`thinking.block_binding.prefix_mismatch_behavior` to "drop_block".'
        )
        if not has_beta:
            message += f" That setting requires the `{BETA}` value in the `anthropic-beta` header."
        return Checked(error=message, failing=tuple(failing))
    transformations = None
    if has_beta:
        transformations = tuple(
            {
                "type": "thinking_dropped",
                "path": f"messages.{i}.content.{j}",
                "reason": "prefix_binding_mismatch",
            }
            for i, j in failing
        )
    return Checked(
        dropped=tuple(failing),
        transformations=transformations,
        last=valid,
        failing=tuple(failing),
    )


def omits(body: dict[str, Any]) -> bool:
    """Whether the request asks for thinking with its text omitted (`display: "omitted"`)."""
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("display") == "omitted"


def answer_thinking(body: dict[str, Any], checked: Checked, text: str) -> dict[str, str]:
    """A thinking block the model answers this request with, signed over all of it; its
    text empty when the request asked for it omitted."""
    messages = body.get("messages") or []
    prefix = prefix_digest(body, len(messages), 0)
    omitted = omits(body)
    signature = sign(prefix, checked.last, text, omitted)
    return {"type": "thinking", "thinking": "" if omitted else text, "signature": signature}


def signed(
    messages: list[dict[str, Any]], system: Any = None, tools: Any = None
) -> list[dict[str, Any]]:
    """A host's transcript with every thinking block that has no signature of the model's yet
    signed as the model would have signed it had it received this transcript unchanged up to
    the block (what a host holds when nothing rewrote its requests); a block the model signed
    (an answer kept as it came) keeps its signature."""
    out: list[dict[str, Any]] = json.loads(json.dumps(messages))
    previous: str | None = None
    for i, message in enumerate(out):
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for j, block in enumerate(content):
            if not isinstance(block, dict) or block.get("type") not in _THINKING:
                continue
            if _read(_signature_of(block)) is not None:
                previous = _signature_of(block)
                continue
            prefix = prefix_digest({"system": system, "tools": tools, "messages": out}, i, j)
            signature = sign(prefix, previous, _text_of(block))
            if block.get("type") == "thinking":
                block["signature"] = signature
            previous = signature
    return out
