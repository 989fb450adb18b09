"""Tool-call annotations: `[tool_use:NAME, KEY:VALUE]`, the one argument that tells most.

A view shows a call by its name and one argument: a file before a command, a command before a
folder, then a URL, a query, any other text, and last lists, objects and scalars (an Edit's
`replace_all:false` says nothing). A long path keeps its tail, where the file name is.
"""

from __future__ import annotations

import json

from frs.escaping import escape_name, escape_value
from frs.model import ToolCall
from frs.text import shorten

_ANNOTATION_VALUE_CHARS = 60
# The keys an annotation prefers: best group first and, inside a group, in the order named (a
# grep's `query` over its `pattern`); a key with one of the group's endings comes after its names.
_TELLING_KEYS: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (
        ("path", "file_path", "filepath", "file", "filename", "file_name", "target_file"),
        ("_path", "_file"),
    ),
    (("command", "cmd", "script", "code"), ()),
    # A folder says where a command ran, less than the command itself.
    (("dir", "directory", "cwd", "workdir"), ("_dir", "_directory")),
    (("url", "uri"), ("_url", "_uri")),
    (("query", "q", "pattern", "regex", "glob", "search"), ("_query", "_pattern")),
)
_PATHS = (0, 2)  # the groups whose values keep their tail when cut
_COMMAND = 1  # a command may be an argv list: `["bash", "-lc", "ls"]`
_TEXT = len(_TELLING_KEYS)  # a string under any other key
_OTHER = _TEXT + 1  # lists, objects, null, blank strings
_SCALAR = _TEXT + 2  # booleans and numbers


def annotate_call(call: ToolCall) -> str:
    """`[tool_use:NAME, KEY:VALUE]`: the argument that tells most (see `_telling`), its value cut
    to 60 characters (a path keeps its tail, `…/lib/spotter/indexer.ex`; others their head)."""
    key, value, rank = "", "", _OTHER
    try:
        args = json.loads(call.arguments) if call.arguments.strip() else {}
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's depth
        args = call.arguments
    if isinstance(args, dict) and args:
        key, rank = _telling(args)
        raw = args[key]
        value = raw if isinstance(raw, str) else json.dumps(raw, ensure_ascii=False)
    elif isinstance(args, str) and args:
        value = args
    elif args not in ({}, "", None):
        value = json.dumps(args, ensure_ascii=False)
    value = " ".join(value.split())
    if rank in _PATHS:
        value = _path_tail(value, _ANNOTATION_VALUE_CHARS)
    else:
        value = shorten(value, _ANNOTATION_VALUE_CHARS)
    inside = escape_name(call.name)
    if value:
        inside += f", {escape_name(key) + ':' if key else ''}{escape_value(value)}"
    return "[tool_use:" + inside + "]"


def telling_key(args: dict[str, object]) -> str:
    """The key of the argument that tells most about a call (`annotate_call`'s choice);
    `args` must not be empty."""
    return _telling(args)[0]


def _telling(args: dict[str, object]) -> tuple[str, int]:
    """The key whose value tells most about a call, and its group: a file, then a command, a
    folder, a URL, a query or pattern, any other text, lists and objects, and last booleans and
    numbers (an Edit's `replace_all:false` says nothing). Ties go to the first key."""
    ranked = [(*_rank(key, value), index, key) for index, (key, value) in enumerate(args.items())]
    group, _, _, key = min(ranked)
    return key, group


def _rank(key: str, value: object) -> tuple[int, int]:
    """(group, place inside the group): lower tells more."""
    if isinstance(value, bool | int | float):
        return _SCALAR, 0
    text = isinstance(value, str) and value.strip() != ""
    if not (text or (isinstance(value, list) and value)):
        return _OTHER, 0
    name = key.lower()
    for group, (names, endings) in enumerate(_TELLING_KEYS):
        if not text and group != _COMMAND:
            continue
        if name in names:
            return group, names.index(name)
        if name.endswith(endings):
            return group, len(names)
    return (_TEXT, 0) if text else (_OTHER, 0)


def _path_tail(path: str, limit: int) -> str:
    """A long path cut from the start at a `/` (or `\\`) boundary, so its file name survives."""
    if len(path) <= limit:
        return path
    tail = path[-(limit - 2) :]
    cut = min((i for i in (tail.find("/"), tail.find("\\")) if i >= 0), default=-1)
    if cut < 0:  # one name longer than the limit: its end, with no separator to keep
        return "…" + path[-(limit - 1) :]
    return "…" + tail[cut:]
