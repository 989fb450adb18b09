"""Reasoning items as the OpenAI Responses API hands them out and takes them back.

A reasoning model's answer starts with a `reasoning` item: `{"type": "reasoning", "id": "rs_…",
"summary": [...], "encrypted_content": "…"}`. In stateless use (`store: false`, as Codex runs)
the reasoning travels in `encrypted_content`, which the API writes by default there (and when
`include` asks for `reasoning.encrypted_content`); the client sends the items back as it got
them, and the API decrypts them. What it refuses, as it does (`check`):

- encrypted content it did not write, or that was changed: `invalid_encrypted_content`;
- a reasoning item with an id whose following item (the call or message it preceded in the
  answer) is not right after it: the item was provided without its required following item;
- with `store: false`, a reasoning item that carries no encrypted content: nothing is stored
  to find it by.

Reasoning items of older turns may go; only everything since the last user message must be
passed back untouched, which is the host's business, not the API's to check.

Pages: https://developers.openai.com/api/docs/guides/reasoning ("Preserve reasoning without
stored responses", the item shape, passing items back around function calls),
https://developers.openai.com/api/docs/guides/function-calling. The guides name no error
texts: these are the API's as clients report them (openai/codex#8145 and #35334,
continuedev/continue#8933, earendil-works/pi#5059).
"""

from __future__ import annotations

import base64
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tests.hosts.model.wire import new_id

_SEALED = "frs-test-rs."
#: The items a reasoning item may stand before: what the model wrote after it.
_FOLLOWERS = frozenset(
    {
        "function_call",
        "custom_tool_call",
        "tool_search_call",
        "web_search_call",
        "local_shell_call",
        "file_search_call",
        "computer_call",
        "image_generation_call",
        "code_interpreter_call",
        "mcp_call",
    }
)


def _mac(text: str) -> str:
    return hashlib.sha256(("frs-test-rs:" + text).encode()).hexdigest()[:32]


def seal(text: str) -> str:
    """The encrypted content the scripted model gives reasoning of this text."""
    payload = json.dumps({"t": text, "mac": _mac(text)}).encode()
    return _SEALED + base64.urlsafe_b64encode(payload).decode()


def opened(content: str) -> str | None:
    """The reasoning text sealed in `content`, or None when the model did not write it as it
    is (changed, cut, or another's)."""
    if not content.startswith(_SEALED):
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(content[len(_SEALED) :]))
    except ValueError:
        return None
    if not isinstance(payload, dict) or not isinstance(payload.get("t"), str):
        return None
    return payload["t"] if payload.get("mac") == _mac(payload["t"]) else None


def encrypted(body: dict[str, Any]) -> bool:
    """Whether an answer to this request carries its reasoning's encrypted content: by
    default in stateless use, and when `include` asks for it."""
    include = body.get("include") or []
    return body.get("store") is False or "reasoning.encrypted_content" in include


def item(body: dict[str, Any], text: str) -> dict[str, Any]:
    """The reasoning item the model answers `body` with, thinking `text`. Its summary is
    empty unless the request asked for one (`reasoning.summary`)."""
    wanted = (body.get("reasoning") or {}).get("summary")
    summary = [{"type": "summary_text", "text": text}] if wanted else []
    found: dict[str, Any] = {"type": "reasoning", "id": new_id("rs_"), "summary": summary}
    if encrypted(body):
        found["encrypted_content"] = seal(text)
    return found


@dataclass(frozen=True, slots=True)
class Refusal:
    """The API's 400 for a request: its error's message, code and param."""

    message: str
    code: str | None = None
    param: str | None = "input"


def check(body: dict[str, Any]) -> Refusal | None:
    """What the API refuses in the request's reasoning items (see the module docstring), the
    first one found; None when it takes them."""
    items = body.get("input")
    if not isinstance(items, list):
        return None
    for i, found in enumerate(items):
        if not isinstance(found, dict) or found.get("type") != "reasoning":
            continue
        ident = found.get("id")
        content = found.get("encrypted_content")
        if isinstance(content, str):
            if opened(content) is None:
                where = f"for item {ident} " if ident else f"{content[:8]}… "
                return Refusal(
                    f"The encrypted content {where}could not be verified. Reason: Encrypted "
                    "content could not be decrypted or parsed.",
                    "invalid_encrypted_content",
                    None,
                )
        elif body.get("store") is False:
            return Refusal(
                f"Item with id '{ident}' not found. Items are not persisted when `store` is set "
                "to false. Try again with `store` set to true, or remove this item from your "
                "input."
            )
        following = items[i + 1] if i + 1 < len(items) else None
        if ident and not _follows(following):
            return Refusal(
                f"Item '{ident}' of type 'reasoning' was provided without its required "
                "following item."
            )
    return None


def _follows(following: Any) -> bool:
    """Whether an item can be the one a reasoning item stood before: a call, or a message
    of the model's."""
    if not isinstance(following, dict):
        return False
    kind = following.get("type", "message")
    if kind == "message":
        return following.get("role") == "assistant"
    return kind in _FOLLOWERS
