"""The facts of a finished tool exchange: per call, the tool, its telling argument, the command,
the files it read and changed, how it ended, and the aliases of its originals.

An exchange is an assistant message that made tool calls with the results that answer them
(`exchanges`). Facts come from the call's arguments, read by the argument names of the common
hosts' tools (Claude Code, Codex, OpenCode, Gemini CLI, OpenHands, SWE-agent; an unknown tool
by its telling argument, `frs.annotations`), and from its result's text (`frs.outcomes`,
`frs.mentions`). A command is kept verbatim and whole here; `frs.cards` decides how much of it
a card shows. Pure and deterministic: the same messages give the same facts.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from frs.annotations import telling_key
from frs.mentions import error_lines, paths
from frs.model import Message, PlanStep, StepStatus, ToolCall
from frs.outcomes import Outcome, numbers, outcome, result_text

#: What a call does, as far as its tool and arguments tell: runs a shell command, reads or
#: lists files, changes files, writes the plan, or anything else.
CallKind = Literal["shell", "read", "change", "plan", "other"]

# Tool names as hosts spell them, lowercased: Claude Code (Bash, Read, Edit, MultiEdit, Write,
# Grep, Glob, LS, NotebookEdit), Codex (shell, exec_command, apply_patch, read_file), OpenCode
# (bash, read, edit, write, patch, grep, glob, list), Gemini CLI (run_shell_command, read_file,
# read_many_files, replace, write_file, list_directory, glob, search_file_content), OpenHands
# (execute_bash, str_replace_editor), SWE-agent (bash, open, create, edit, insert, find_file,
# search_dir, search_file).
_SHELL_TOOLS = frozenset(
    [
        "bash",
        "execute_bash",
        "shell",
        "exec_command",
        "run_shell_command",
        "local_shell",
        "terminal",
        "run_terminal_cmd",
        "execute_command",
        "run_command",
        "shell_command",
        "container.exec",
    ]
)
_SHELLISH = re.compile(r"bash|shell|terminal|exec|command", re.IGNORECASE)
# Tools that search: a card shows what they looked for, then where.
_SEARCH_TOOLS = frozenset(
    [
        "grep",
        "glob",
        "search",
        "search_file",
        "search_file_content",
        "search_dir",
        "find_file",
        "find",
        "codebase_search",
        "file_search",
        "ripgrep",
    ]
)
_READ_TOOLS = _SEARCH_TOOLS | frozenset(
    [
        "read",
        "read_file",
        "read_many_files",
        "view",
        "view_file",
        "open",
        "cat",
        "notebookread",
        "ls",
        "list",
        "list_dir",
        "list_directory",
    ]
)
_CHANGE_TOOLS = frozenset(
    [
        "edit",
        "multiedit",
        "write",
        "write_file",
        "replace",
        "create",
        "insert",
        "apply_patch",
        "patch",
        "notebookedit",
        "edit_file",
        "create_file",
        "delete_file",
        "str_replace",
        "search_replace",
        "append",
    ]
)
#: The argument that says what a search tool looked for, by preference.
SEARCH_KEYS = ("pattern", "query", "regex", "search_term", "q", "glob", "file_name")
_PLAN_TOOLS = frozenset({"todowrite", "update_plan", "write_todos", "todo_write"})
# A file editor whose `command` argument says whether it reads or changes (OpenHands, Anthropic).
_EDITORS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor"})
_EDITOR_READS = frozenset({"view"})
# A thought or a final message in a call: the model's own words, as its text is.
_NOTE_TOOLS = {"think": "thought", "finish": "message", "submit": "message"}

_FILE_KEYS = (
    "file_path",
    "filePath",
    "absolute_path",
    "path",
    "filename",
    "file_name",
    "file",
    "filepath",
    "target_file",
    "notebook_path",
)
_FILE_LIST_KEYS = ("paths", "file_paths", "files")
_COMMAND_KEYS = ("command", "cmd")
_PATCH_KEYS = ("input", "patch", "patchText", "patch_text")
_SHELLS = frozenset({"bash", "sh", "zsh", "dash"})
_SHELL_FLAGS = frozenset({"-c", "-lc", "-ic", "-lic", "-cl"})

_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Update|Add|Delete) File|Move to): (.+?)\s*$")
_DIFF_FILE = re.compile(r"^\+\+\+ (?:b/)?(\S+)")
# SWE-agent's editor names the file it just changed in its answer, not in the call.
_EDITED_FILE = re.compile(r"^\[File: (.+?) \(\d+ lines total\)\]", re.MULTILINE)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w-]*)\1")
_SEGMENT = re.compile(r"&&|\|\||[;|\n]")
_WRITERS = re.compile(r"^\s*(?:sudo\s+)?(?:sed\s+(?:-\S+\s+)*-i|touch|rm|mv|truncate)\b")
_COPY = re.compile(r"^\s*(?:sudo\s+)?cp\b")  # changes its last path only
_REDIRECT = re.compile(r"(?<![<&\d])(?:>>?|\btee(?:\s+-a)?)\s*['\"]?([^\s'\";|&<>()]+)")
# SWE-agent's editor commands, typed in a ReAct text: the ones that name their file, and the
# ones that change the file open in the editor (its answer names it).
_TEXT_EDITOR_FILES = {"open": "path", "create": "filename"}
_TEXT_EDITS = frozenset({"edit", "insert"})
# A fenced block with no language or a shell's: a command, not an example of code.
_FENCE = re.compile(r"```(?:bash|sh|shell|console)?[ \t]*\n(.*?)```", re.DOTALL)

_STATUS_LINE = re.compile(r"(?i)^(?:exit code|<returncode>)")
_FIRST_LINE_CHARS = 400
_FAILURE = re.compile(
    r"error|fail|malformed|not found|cannot|can't|denied|invalid|no such|unable|refused|missing",
    re.IGNORECASE,
)
_SHORT_OUTPUT_CHARS = 80  # an output this short is a fact itself ("957.0", "nothing to commit")
_SEEN_KEPT = 12  # paths of a result kept (a listing can name thousands)
_ERRORS_KEPT = 8
_SHORT_VALUE_CHARS = 120  # an unknown tool is told by its first string argument this short


@dataclass(frozen=True, slots=True)
class Exchange:
    """An assistant message that made tool calls, and the results that answer them in thread
    order (a call still unanswered has none)."""

    call: Message
    results: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class CallFacts:
    """One call and its result, as facts. Paths are as the call or result spelled them."""

    tool: str
    kind: CallKind
    key: str  # the telling argument's key; "" when there is none
    value: str  # the telling argument's value, whole (a list or object as JSON)
    command: str | None  # the shell command, verbatim; None for a call that runs none
    read: tuple[str, ...]  # files the call read, listed or searched
    changed: tuple[str, ...]  # files it wrote, edited, patched, moved or removed
    named: tuple[str, ...]  # other paths its arguments name (in a file's content, a prompt)
    seen: tuple[str, ...]  # paths its result names that its arguments do not, the first few
    seen_total: int  # how many distinct such paths the result names
    outcome: Outcome
    errors: tuple[str, ...]  # the result's error lines (`frs.mentions.error_lines`), the first few
    chars: int  # of the result; 0 when unanswered
    lines: int
    output: str  # the result's output whole, whitespace made single spaces, when it is short
    numbers: tuple[str, ...]  # summary lines of a test run, a linter, git
    number: int  # the message that made the call: `M.<number>`
    result: int | None  # the result's number, None while unanswered
    plan: tuple[PlanStep, ...] = ()  # the todo list a plan tool wrote
    note: str = ""  # the model's words in the call (a think tool's thought, finish's message)

    @property
    def label(self) -> str:
        """How the call ended, as a card and a digest say it: the outcome's label (`ok`,
        `exit 2`, `error`), but `exit 0` or `error` when the output shows an error the status
        does not (a pipe that hid a failure, a host that states no status)."""
        if self.outcome.failed or not self.errors:
            return self.outcome.label
        return "exit 0" if self.outcome.exit_code == 0 else "error"


@dataclass(frozen=True, slots=True)
class ExchangeFacts:
    """The facts of an exchange: the assistant's words (whitespace made single spaces, whole),
    each call's facts in the order the calls were made, and the estimated tokens of the
    messages it stands for (what a card must stay well under)."""

    number: int
    said: str
    calls: tuple[CallFacts, ...]
    tokens: int = 0


def exchanges(entries: Sequence[Message]) -> list[Exchange]:
    """The finished exchanges among `entries`, in order: assistant messages whose every call
    is answered by a result among them. A result answers the call it names (`answers`, or else
    the latest earlier call with its `tool_call_id`)."""
    found = _answered(entries)
    finished = []
    for message in entries:
        if message.kind != "message" or message.number is None or not message.tool_calls:
            continue
        results = found.get(message.number, {})
        if all(call.id in results for call in message.tool_calls):
            ordered = sorted(results.values(), key=lambda result: result.ord)
            finished.append(Exchange(message, tuple(ordered)))
    return finished


def results_by_call(entries: Sequence[Message]) -> dict[tuple[int, str], Message]:
    """The first result answering each call among `entries`, by (call's message number, id)."""
    return {
        (number, call_id): result
        for number, answered in _answered(entries).items()
        for call_id, result in answered.items()
    }


def exchange_facts(exchange: Exchange) -> ExchangeFacts:
    """The facts of one exchange (its calls with the results that answer them)."""
    message = exchange.call
    number = message.number or 0
    by_id: dict[str, Message] = {}
    for result in exchange.results:
        if result.tool_call_id is not None:
            by_id.setdefault(result.tool_call_id, result)
    calls = tuple(call_facts(call, number, by_id.get(call.id)) for call in message.tool_calls)
    tokens = message.tokens + sum(result.tokens for result in exchange.results)
    return ExchangeFacts(number, " ".join(message.content.split()), calls, tokens)


def call_facts(
    call: ToolCall, number: int, result: Message | None, *, seen: bool = True
) -> CallFacts:
    """The facts of one call made by message `number`, and of its result (None: unanswered).
    `seen=False` skips the paths the result names (the longest search, in a long output)."""
    args = _arguments(call.arguments)
    name = call.name.lower()
    content = result.content if result is not None else ""
    output = result_text(content)
    kind, command, read, changed, named = _reading(name, args)
    if kind == "change" and not changed:
        changed = [m.group(1) for m in _EDITED_FILE.finditer(output)][:1]
    key, value = _telling(name, kind, command, args, read, changed)
    named = _without(named, read, changed)
    ended = outcome(content) if result is not None else Outcome()
    found = _without(paths([output]), read, changed, named) if seen else []
    return CallFacts(
        tool=call.name,
        kind=kind,
        key=key,
        value=value,
        command=command,
        read=tuple(_without(read, changed)),
        changed=tuple(changed),
        named=tuple(named),
        seen=tuple(found[:_SEEN_KEPT]),
        seen_total=len(found),
        outcome=ended,
        errors=_errors(output, ended),
        chars=len(content),
        lines=len(content.splitlines()),
        output=_short(output),
        numbers=numbers(output),
        number=number,
        result=result.number if result is not None else None,
        plan=_plan(args) if kind == "plan" else (),
        note=_note(name, args),
    )


def _errors(output: str, ended: Outcome) -> tuple[str, ...]:
    """The result's error lines; for a failed call whose output names no error, the line that
    says what went wrong (`ERROR: No replacement was performed`, `patch: **** malformed patch
    at line 39`), else its last line."""
    found = error_lines(output, _ERRORS_KEPT)
    if found or not ended.failed:
        return tuple(found)
    lines = [
        stripped
        for line in output.splitlines()
        if (stripped := line.strip())
        and len(stripped) <= _FIRST_LINE_CHARS
        and not _STATUS_LINE.match(stripped)
    ]
    if not lines:
        return ()
    at = next((i for i, line in enumerate(lines) if _FAILURE.search(line)), len(lines) - 1)
    told = lines[at]
    if told.endswith(":") and at + 1 < len(lines):  # `ERROR:` says what follows it
        told += " " + lines[at + 1]
    return (" ".join(told.split()),)


def _short(output: str) -> str:
    flat = " ".join(output.split())
    return flat if len(flat) <= _SHORT_OUTPUT_CHARS else ""


def text_command(content: str) -> str | None:
    """The command an assistant's text ends with, in a fenced block with no language or a
    shell's, as SWE-agent's ReAct prompt asks for (`DISCUSSION … ```\\ncommand\\n````); None
    when the text has no such block."""
    blocks = _FENCE.findall(content)
    if not blocks:
        return None
    command: str = blocks[-1].strip("\n")
    return command if command.strip() else None


def text_call(content: str) -> ToolCall | None:
    """The call an assistant's text makes in SWE-agent's ReAct shape (`text_command`): the
    editor command it names (`open PATH`, `create PATH`, `edit …`, `insert …`), else a bash
    command; None when the text ends with no command. The call has no id."""
    command = text_command(content)
    if command is None:
        return None
    word, _, rest = command.strip().partition(" ")
    target = rest.split("\n", 1)[0].split(" ", 1)[0].strip()
    if word in _TEXT_EDITOR_FILES and target:
        return ToolCall("", word, json.dumps({_TEXT_EDITOR_FILES[word]: target}))
    if word in _TEXT_EDITS:
        return ToolCall("", word, json.dumps({"text": command}))
    return ToolCall("", "bash", json.dumps({"command": command}))


def shell_paths(command: str) -> tuple[list[str], list[str], list[str]]:
    """The paths a shell command reads (or runs), changes (a redirect's target, `sed -i`,
    `touch`, `rm`, `mv`, `tee`, `cp`'s destination), and names only inside a here-document's
    body."""
    script, bodies = _split_heredocs(command)
    changed: dict[str, None] = {}
    for segment in _SEGMENT.split(script):
        found = paths([segment])
        if _WRITERS.match(segment):
            changed.update((path, None) for path in found)
        elif _COPY.match(segment) and found:
            changed.setdefault(found[-1], None)
    changed.update((target, None) for target in redirect_targets(command))
    read = _without(paths([script]), changed)
    named = _without(paths(bodies), read, changed)
    return read, list(changed), named


def redirect_targets(command: str) -> list[str]:
    """The files a shell command writes whole through `>`, `>>` or `tee` (not `/dev/…`), a
    here-document's body aside."""
    script, _ = _split_heredocs(command)
    targets: dict[str, None] = {}
    for found in _REDIRECT.finditer(script):
        target = found.group(1)
        if not target.startswith("/dev/") and ("." in target or "/" in target):
            targets.setdefault(target, None)
    return list(targets)


def _answered(entries: Sequence[Message]) -> dict[int, dict[str, Message]]:
    """Results by the number of the call's message, then by call id (the first answer wins)."""
    latest: dict[str, int] = {}
    found: dict[int, dict[str, Message]] = {}
    for message in entries:
        if message.kind != "message":
            continue
        if message.role == "tool" and message.tool_call_id is not None:
            number = message.answers or latest.get(message.tool_call_id)
            if number is not None:
                found.setdefault(number, {}).setdefault(message.tool_call_id, message)
        if message.number is not None:
            latest.update((call.id, message.number) for call in message.tool_calls)
    return found


def _arguments(text: str) -> dict[str, object]:
    """A call's arguments as an object; text that is not a JSON object (a custom tool's raw
    input, such as Codex's apply_patch) as `{"input": text}`."""
    try:
        args = json.loads(text) if text.strip() else {}
    except (ValueError, RecursionError):
        return {"input": text}
    if isinstance(args, dict):
        return args
    return {"input": text} if isinstance(args, str) else {}


def _reading(
    name: str, args: Mapping[str, object]
) -> tuple[CallKind, str | None, list[str], list[str], list[str]]:
    """The call's kind, its shell command, and the paths it reads, changes and names."""
    command = _command(name, args)
    if command is not None and _argv(args)[:1] == ["apply_patch"]:
        files = _patch_files(_argv(args)[1] if len(_argv(args)) > 1 else "")
        return "change", "apply_patch", [], files, []
    if command is not None:
        read, changed, named = shell_paths(command)
        return "shell", command, read, changed, named + _named(args, _COMMAND_KEYS)
    searched = next((k for k in SEARCH_KEYS if k in args), "") if name in _SEARCH_TOOLS else ""
    files = _file_arguments({k: v for k, v in args.items() if k != searched})
    if name in _PLAN_TOOLS:
        return "plan", None, [], [], _named(args, ())
    if name in ("apply_patch", "patch") or _patch_text(args):
        patched = _patch_files(_patch_text(args))
        return "change", None, [], _merge(files, patched), _named(args, _PATCH_KEYS)
    kind: CallKind
    if name in _EDITORS:
        kind = "read" if str(args.get("command", "view")) in _EDITOR_READS else "change"
    elif name in _CHANGE_TOOLS:
        kind = "change"
    elif name in _READ_TOOLS or files:
        kind = "read"
    else:
        kind = "other"
    named = _named(args, _FILE_KEYS + _FILE_LIST_KEYS)
    if kind == "change":
        return kind, None, [], files, named
    return kind, None, files, [], named


def _command(name: str, args: Mapping[str, object]) -> str | None:
    """The shell command a call runs, verbatim; an argv list as the script a shell was handed
    (`["bash", "-lc", "cargo test"]` is `cargo test`), else joined as a shell would read it."""
    if name not in _SHELL_TOOLS and not _SHELLISH.search(name):
        return None
    if name in _EDITORS:
        return None
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        argv = _argv({key: value})
        if argv:
            shell = argv[0].rsplit("/", 1)[-1]
            if shell in _SHELLS and len(argv) >= 3 and argv[1] in _SHELL_FLAGS:
                return argv[2]
            return shlex.join(argv)
    return None


def _argv(args: Mapping[str, object]) -> list[str]:
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return [str(v) for v in value]
    return []


def _file_arguments(args: Mapping[str, object]) -> list[str]:
    files: dict[str, None] = {}
    for key in _FILE_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            files.setdefault(value.strip(), None)
    for key in _FILE_LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            files.update((v.strip(), None) for v in value if isinstance(v, str) and v.strip())
    return list(files)


def _patch_text(args: Mapping[str, object]) -> str:
    for key in _PATCH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and ("*** Begin Patch" in value or "\n+++ " in value):
            return value
    return ""


def _patch_files(patch: str) -> list[str]:
    """The files a patch touches: apply_patch's `*** Update File:` (Add, Delete, Move to)
    lines, or a unified diff's `+++` lines."""
    files: dict[str, None] = {}
    for line in patch.splitlines():
        found = _PATCH_FILE.match(line)
        if found:
            files.setdefault(found.group(1), None)
            continue
        diff = _DIFF_FILE.match(line)
        if diff and diff.group(1) != "/dev/null":
            files.setdefault(diff.group(1), None)
    return list(files)


def _named(args: Mapping[str, object], skipped: Iterable[str]) -> list[str]:
    """Paths inside the arguments' other strings (a file's new content, a prompt), at any depth."""
    skip = set(skipped)
    texts = [text for key, value in args.items() if key not in skip for text in _strings(value)]
    return paths(texts)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    return []


def _telling(
    name: str,
    kind: CallKind,
    command: str | None,
    args: Mapping[str, object],
    read: Sequence[str],
    changed: Sequence[str],
) -> tuple[str, str]:
    """The argument a card shows: the command, what a search looked for, the file, else
    `frs.annotations`' choice (an unknown tool's first short string argument when that choice
    is a long text)."""
    if command is not None:
        return "command", command
    searched = next((k for k in SEARCH_KEYS if k in args), "") if name in _SEARCH_TOOLS else ""
    if searched:
        value = args[searched]
        return searched, value if isinstance(value, str) else json.dumps(value)
    files = list(changed) or list(read)
    if kind in ("read", "change") and files:
        key = next((k for k in (*_FILE_KEYS, *_FILE_LIST_KEYS) if k in args), "")
        return key, ", ".join(files)
    if not args:
        return "", ""
    key = telling_key(dict(args))
    value = args[key]
    if isinstance(value, str) and len(value) > _SHORT_VALUE_CHARS:
        short = [k for k, v in args.items() if isinstance(v, str) and _is_short(v)]
        key = short[0] if short else key
        value = args[key]
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return key, text


def _is_short(value: str) -> bool:
    return 0 < len(value.strip()) <= _SHORT_VALUE_CHARS


def _plan(args: Mapping[str, object]) -> tuple[PlanStep, ...]:
    """The steps of a todo list: Claude Code's and OpenCode's `todos` ({content, status}),
    Codex's `plan` ({step, status}), Gemini CLI's `todos` ({description, status})."""
    items = args.get("todos", args.get("plan"))
    if not isinstance(items, list):
        return ()
    steps = []
    for item in items:
        if not isinstance(item, dict):
            continue
        texts = [item.get(key) for key in ("content", "step", "description", "title")]
        text = next((t for t in texts if isinstance(t, str) and t.strip()), "")
        if text:
            steps.append(PlanStep(" ".join(text.split()), _status(item.get("status"))))
    return tuple(steps)


def _status(value: object) -> StepStatus:
    status = str(value).lower().replace("-", "_")
    if status in ("completed", "complete", "done"):
        return "done"
    if status in ("in_progress", "active", "doing", "running"):
        return "doing"
    return "todo"


def _note(name: str, args: Mapping[str, object]) -> str:
    key = _NOTE_TOOLS.get(name)
    value = args.get(key) if key else None
    return " ".join(value.split()) if isinstance(value, str) else ""


def _split_heredocs(command: str) -> tuple[str, list[str]]:
    """The command's own lines, and the bodies of its here-documents (a script or a file's
    content it writes), which a shell reads as data."""
    script: list[str] = []
    bodies: list[str] = []
    lines = command.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        script.append(line)
        index += 1
        for found in _HEREDOC.finditer(line):
            delimiter = found.group(2)
            body: list[str] = []
            while index < len(lines) and lines[index].strip() != delimiter:
                body.append(lines[index])
                index += 1
            index += 1  # the delimiter's own line
            bodies.append("\n".join(body))
    return "\n".join(script), bodies


def _without(items: Iterable[str], *others: Iterable[str]) -> list[str]:
    drop = {item for other in others for item in other}
    return [item for item in dict.fromkeys(items) if item not in drop]


def _merge(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))
