"""The ``workspace`` built-in: the seed's workspace-editing tool, one flat ``operation`` surface.

It drives ``context.agent_context.workspaces`` (the same registry the prompt renders), so an
edit shows in the next turn's ``## Workspace`` section. Small models handle flat arguments
better than nested ones, so a range is four 1-based ints lifted with ``range_of``. Every fault
is a ``WorkspaceError`` whose message starts with its code (``MODALITY: ...``), which the kit's
``ToolManager`` hands the model as the tool error.

``list_workspaces`` names the workspaces the model may ``switch`` to (the user's own, by id
and name, the active one marked).

Its safety depends on the call: ``list``, ``read``, ``search`` and ``list_workspaces`` are
read-only (they run
concurrently, and in read-only mode), every other operation is a write (``is_safe``). An edit
answers the model with the same short result as ever and shows the user a unified diff of
the change on the tool card (the kit's ``{"result", "display"}`` payload).

The run's event loop serves every socket of the process, so nothing here that grows with the
model's input runs on it unbounded: ``search`` and ``replace`` match on a worker thread within
the kit's ``PatternBounds`` (a catastrophic pattern is a ``PATTERN`` fault), and a
large edit's diff is worked out on a worker thread and only up to ``DIFF_CHARS``.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast, get_args

from orkestrel.core import (
    BinaryContent,
    File,
    Tool,
    Workspace,
    WorkspaceError,
    WorkspaceManager,
    create_tool,
    range_of,
)
from orkestrel.core.errors import WorkspaceErrorCode

from ..registry import ToolContext
from ..workspace_directory import WorkspaceEntry, owned_workspaces

__all__ = [
    "DESCRIPTION",
    "DIFF_CHARS",
    "LINE_CHARS",
    "NAME",
    "OPERATIONS",
    "PARAMETERS",
    "SAFE",
    "SAFE_OPERATIONS",
    "SEARCH_LIMIT",
    "Operation",
    "create_workspace_tool",
    "is_safe",
    "run_operation",
]

NAME = "workspace"
# The tool as a whole (what the registry and a new row record): it writes, moves and removes
# files. A call's own safety is ``is_safe``'s answer.
SAFE = False
SAFE_OPERATIONS: frozenset[str] = frozenset({"list", "read", "search", "list_workspaces"})
SEARCH_LIMIT = 100  # matches returned by one search: keeps a result small enough to read
# Characters of a matched line a search answers: a minified file's one line of a megabyte,
# matched a hundred times, would be a hundred megabytes of JSON. A longer line is cut to
# the part around its match, an ellipsis marking each cut.
LINE_CHARS = 400
# Characters one edit's diff may compare, both sides of every file it changed. difflib is
# pure Python, about 0.2 s for a 1 MB file: a larger change is named on the card, not diffed.
DIFF_CHARS = 256 * 1024
# Below this many characters a diff is worked out in place: cheaper than a thread's round trip.
_INLINE_DIFF_CHARS = 16 * 1024

Operation = Literal[
    "list",
    "read",
    "write",
    "prepend",
    "append",
    "search",
    "replace",
    "move",
    "remove",
    "switch",
    "list_workspaces",
]
OPERATIONS: tuple[str, ...] = get_args(Operation)
_RANGE_KEYS = ("start_line", "start_column", "end_line", "end_column")

DESCRIPTION = (
    "Read and edit the files of the active workspace (shown to you in the Workspace section). "
    "Choose an operation: list (every file); read (path; with start_line, start_column, "
    "end_line, end_column for a span); write (path, content; with a range it replaces that "
    "span); prepend / append (path, content); search (query, regex); replace (query, "
    "replacement, regex: every match in every file); move (path, to); remove (path); switch "
    "(workspace: make another workspace active); list_workspaces (the workspaces you may "
    "switch to, by id and name). Lines and columns count from 1; a range's end is exclusive."
)


def _text(description: str) -> dict[str, Any]:
    # Nullable: small models often send null for the arguments an operation does not use.
    return {"type": ["string", "null"], "description": description}


def _caret(description: str) -> dict[str, Any]:
    return {"type": ["integer", "null"], "minimum": 1, "description": description}


PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operation": {
            "type": "string",
            "enum": list(OPERATIONS),
            "description": "What to do.",
        },
        "path": _text("The file's path, e.g. notes/todo.md."),
        "content": _text("The text to write, prepend or append."),
        "start_line": _caret("First line of a range (1-based)."),
        "start_column": _caret("First column of a range (1-based)."),
        "end_line": _caret("Line where the range ends."),
        "end_column": _caret("Column where the range ends (exclusive)."),
        "query": _text("The text (or, with regex, the pattern) to search for or replace."),
        "replacement": _text("The text that replaces each match."),
        "regex": {"type": ["boolean", "null"], "description": "Treat query as a regex."},
        "to": _text("The new path of a moved file."),
        "workspace": _text("The id of the workspace to switch to."),
    },
    "required": ["operation"],
}

Handler = Callable[[WorkspaceManager, Mapping[str, Any]], Awaitable[Any]]


def _fault(message: str, **context: Any) -> WorkspaceError:
    return WorkspaceError("TOOL", f"TOOL: {message}", context=context or None)


def _need(arguments: Mapping[str, Any], operation: str, *names: str) -> list[Any]:
    missing = [name for name in names if arguments.get(name) is None]
    if missing:
        listed = ", ".join(repr(name) for name in missing)
        raise _fault(f"operation {operation!r} needs {listed}", operation=operation)
    return [arguments[name] for name in names]


def _range(arguments: Mapping[str, Any], operation: str) -> Any:
    given = [arguments.get(key) for key in _RANGE_KEYS]
    if all(value is None for value in given):
        return None
    start_line, start_column, end_line, end_column = _need(arguments, operation, *_RANGE_KEYS)
    return range_of(start_line, start_column, end_line, end_column)


def _active(manager: WorkspaceManager) -> Workspace:
    workspace = manager.active
    if workspace is None:
        raise _fault("no active workspace; switch to one first")
    return workspace


def _summary(file: File) -> dict[str, Any]:
    content = file.content
    kind = (
        {"mime": content.mime}
        if isinstance(content, BinaryContent)
        else {"language": content.language}
    )
    return {"path": file.path, **kind, "size": file.size, "lines": file.lines, "state": file.state}


def _existing(workspace: Workspace, path: str) -> File:
    file = workspace.file(path)
    if file is None:
        raise _fault(f"no file at {path!r}", path=path)
    return file


# -- display: the unified diff of an edit ----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Binary:
    """A binary file's state: its data, so two states compare equal only when it is the same."""

    data: str


# A path's state: its text, a binary file, or ``None`` when there is no file.
_State = str | _Binary | None


def _state(workspace: Workspace, path: str) -> _State:
    file = workspace.file(path)
    if file is None:
        return None
    content = file.content
    return _Binary(content.data) if isinstance(content, BinaryContent) else content.text


def _lines(text: str) -> list[str]:
    # ``splitlines`` would also split on form feeds and the like, which the workspace does not.
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _diff(old: str, before: _State, new: str, after: _State) -> str:
    """The unified diff from ``before`` at ``old`` to ``after`` at ``new`` ("" if unchanged).

    An absent side is ``/dev/null``; a text without a final newline is marked as git marks
    it; a binary side reads "Binary files ... differ"; a rename with no change is its headers.
    """
    if old == new and before == after:
        return ""
    source = "/dev/null" if before is None else f"a/{old}"
    target = "/dev/null" if after is None else f"b/{new}"
    if isinstance(before, _Binary) or isinstance(after, _Binary):
        return f"Binary files {source} and {target} differ\n"
    if before == after:
        return f"--- {source}\n+++ {target}\n"
    lines = difflib.unified_diff(_lines(before or ""), _lines(after or ""), source, target)
    return "".join(
        line if line.endswith("\n") else f"{line}\n\\ No newline at end of file\n" for line in lines
    )


# One path's change: its old path and state, its new path and state (``_diff``'s arguments).
_Change = tuple[str, _State, str, _State]


def _compared(before: _State, after: _State) -> int:
    """The characters ``_diff`` compares: none for a side that did not change or is binary."""
    if before == after or isinstance(before, _Binary) or isinstance(after, _Binary):
        return 0
    return len(before or "") + len(after or "")


def _line_count(state: _State) -> int:
    # As ``_lines`` counts them, without building them.
    if not isinstance(state, str) or not state:
        return 0
    return state.count("\n") + (0 if state.endswith("\n") else 1)


def _too_large(old: str, before: _State, new: str, after: _State) -> str:
    """The headers of a diff too large to show, and how many lines it would have compared."""
    source = "/dev/null" if before is None else f"a/{old}"
    target = "/dev/null" if after is None else f"b/{new}"
    was, now = _line_count(before), _line_count(after)
    return f"--- {source}\n+++ {target}\n(too large to show: {was} lines before, {now} after)\n"


def _diffs(changes: Sequence[_Change]) -> str:
    """Every change's diff, in order; once ``DIFF_CHARS`` are spent, the rest are named."""
    budget, parts = DIFF_CHARS, []
    for old, before, new, after in changes:
        size = _compared(before, after)
        if size > budget:
            parts.append(_too_large(old, before, new, after))
            continue
        budget -= size
        parts.append(_diff(old, before, new, after))
    return "".join(parts)


def _changed(workspace: Workspace, path: str, before: _State) -> _Change:
    """The change of ``path`` from ``before`` to what the workspace holds now."""
    return (path, before, path, _state(workspace, path))


async def _shown(result: Any, *changes: _Change) -> Any:
    """``result`` with the diff of ``changes`` as its ``display`` payload (the bare result
    when nothing changed)."""
    size = sum(_compared(before, after) for _, before, _, after in changes)
    # The states are immutable strings: a worker thread may diff them while the loop serves.
    diff = (
        _diffs(changes) if size <= _INLINE_DIFF_CHARS else await asyncio.to_thread(_diffs, changes)
    )
    return {"result": result, "display": diff} if diff else result


async def _list(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    return [_summary(file) for file in _active(manager).files()]


async def _read(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    (path,) = _need(arguments, "read", "path")
    span = _range(arguments, "read")
    file = _existing(workspace, path)
    if span is not None:
        result = workspace.read(path, span)
        if result is None:  # the file vanished between the check and the read
            raise _fault(f"no file at {path!r}", path=path)
        return {"path": path, "content": result.content, "range": result.range.to_dict()}
    text = workspace.read(path)
    if text is None:
        mime = getattr(file.content, "mime", "binary")
        raise WorkspaceError(
            "MODALITY", f"MODALITY: {path!r} is a binary file ({mime})", context={"path": path}
        )
    return {"path": path, "content": text}


async def _write(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    path, content = _need(arguments, "write", "path", "content")
    span = _range(arguments, "write")
    before = _state(workspace, path)
    if span is None:
        workspace.write(path, content)
    else:
        workspace.write(path, content, span)
    return await _shown(_summary(_existing(workspace, path)), _changed(workspace, path, before))


def _extend(verb: Literal["prepend", "append"]) -> Handler:
    async def handle(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
        workspace = _active(manager)
        path, content = _need(arguments, verb, "path", "content")
        before = _state(workspace, path)
        getattr(workspace, verb)(path, content)
        return await _shown(_summary(_existing(workspace, path)), _changed(workspace, path, before))

    return handle


def _excerpt(line: str, column: int) -> str:
    """``line``, or when longer than ``LINE_CHARS`` the part around the match at ``column``."""
    if len(line) <= LINE_CHARS:
        return line
    start = max(0, min(column - 1 - LINE_CHARS // 4, len(line) - LINE_CHARS))
    end = start + LINE_CHARS
    return f"{'…' if start else ''}{line[start:end]}{'…' if end < len(line) else ''}"


async def _search(
    manager: WorkspaceManager,
    arguments: Mapping[str, Any],
    visible: Collection[str] | None = None,
) -> Any:
    workspace = _active(manager)
    (query,) = _need(arguments, "search", "query")
    regex = bool(arguments.get("regex"))
    # One past the cap tells a full page from a truncated one. Matched on a worker thread,
    # within the kit's bounds: the pattern is the model's.
    found = await workspace.search_in_thread(
        query, regex=regex, limit=SEARCH_LIMIT + 1, paths=visible
    )
    matches = [
        {
            "path": match.path,
            "line": match.line,
            "column": match.column,
            "length": match.length,
            "content": _excerpt(match.content, match.column),
        }
        for match in found[:SEARCH_LIMIT]
    ]
    return {"query": query, "matches": matches, "truncated": len(found) > SEARCH_LIMIT}


async def _replace(
    manager: WorkspaceManager,
    arguments: Mapping[str, Any],
    visible: Collection[str] | None = None,
) -> Any:
    workspace = _active(manager)
    query, replacement = _need(arguments, "replace", "query", "replacement")
    before = {
        file.path: _state(workspace, file.path)
        for file in workspace.files()
        if visible is None or file.path in visible
    }
    tally = await workspace.replace_in_thread(
        query, replacement, regex=bool(arguments.get("regex")), paths=visible
    )
    changes = (_changed(workspace, path, state) for path, state in before.items())
    result = {"query": tally.query, "replaced": tally.replaced, "files": tally.files}
    return await _shown(result, *changes)


async def _move(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    path, target = _need(arguments, "move", "path", "to")
    _existing(workspace, path)
    moved, replaced = _state(workspace, path), _state(workspace, target)
    workspace.move(path, target)
    result = {"from": path, "to": target}
    if path == target:
        return result
    if replaced is None:
        # A plain rename: the headers alone, as git shows one.
        return await _shown(result, (path, moved, target, moved))
    # The move overwrote ``target``: the source is gone and the target's text changed.
    gone: _Change = (path, moved, path, None)
    return await _shown(result, gone, (target, replaced, target, _state(workspace, target)))


async def _remove(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    (path,) = _need(arguments, "remove", "path")
    _existing(workspace, path)
    before = _state(workspace, path)
    workspace.remove(path)
    return await _shown({"path": path, "removed": True}, (path, before, path, None))


async def _switch(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    (id,) = _need(arguments, "switch", "workspace")
    # ``open`` also hydrates a stored workspace the registry has not loaded yet.
    workspace = await manager.open(id)
    if workspace is None:
        known = [one.id for one in manager.workspaces()]
        raise _fault(f"no workspace {id!r}; known: {known}", workspace=id)
    return {"workspace": workspace.id, "files": workspace.count}


Directory = Callable[[], Awaitable[tuple[list[WorkspaceEntry], int]]]
"""The workspaces the model may switch to (at most a page) and how many there are."""


async def _list_workspaces(manager: WorkspaceManager, directory: Directory) -> Any:
    entries, total = await directory()
    active = manager.active
    listed = [
        {**entry, "active": active is not None and entry["id"] == active.id} for entry in entries
    ]
    if active is not None and not any(entry["active"] for entry in listed):
        # The active one is always named, even past the page (or not stored yet).
        listed.insert(0, {"id": active.id, "name": "", "files": active.count, "active": True})
    result: dict[str, Any] = {
        "active": active.id if active is not None else None,
        "workspaces": listed,
    }
    if total > len(entries):
        result["more"] = total - len(entries)
    return result


_HANDLERS: dict[str, Handler] = {
    "list": _list,
    "read": _read,
    "write": _write,
    "prepend": _extend("prepend"),
    "append": _extend("append"),
    "search": _search,
    "replace": _replace,
    "move": _move,
    "remove": _remove,
    "switch": _switch,
}


async def run_operation(
    manager: WorkspaceManager,
    arguments: Mapping[str, Any],
    visible: Collection[str] | None = None,
) -> Any:
    """Dispatch one call's ``operation`` over ``manager``; faults raise ``WorkspaceError``.

    ``visible`` is the scope's ``files`` list: a file outside it is, to the tool as to the
    prompt, not there (it is not listed, read, searched, replaced or written).
    """
    operation = arguments.get("operation")
    handler = _HANDLERS.get(operation) if isinstance(operation, str) else None
    if handler is None:
        raise _fault(f"unknown operation {operation!r}; one of {list(OPERATIONS)}")
    if visible is not None:
        for key in ("path", "to"):
            path = arguments.get(key)
            if isinstance(path, str) and path not in visible:
                raise _fault(f"no file at {path!r}", path=path)
    try:
        return await (
            handler(manager, arguments)
            if visible is None
            else _scoped(handler, manager, arguments, visible)
        )
    except WorkspaceError as error:
        if error.message.startswith(f"{error.code}:"):
            raise
        # The kit's own faults (MODALITY, PATTERN, RANGE) carry the code the
        # model keys on.
        # ``OrkestrelError`` types ``code`` as ``str``; a ``WorkspaceError``'s is always one of
        # ``WorkspaceErrorCode`` (its constructor takes no other).
        code = cast(WorkspaceErrorCode, error.code)
        raise WorkspaceError(code, f"{code}: {error.message}", context=error.context) from error
    except (TypeError, ValueError) as error:
        # Argument shapes the schema let through (an empty path, a NUL) are tool faults too.
        raise _fault(str(error), operation=operation) from error


async def _scoped(
    handler: Handler,
    manager: WorkspaceManager,
    arguments: Mapping[str, Any],
    visible: Collection[str],
) -> Any:
    """Run ``handler`` seeing only the ``visible`` files."""
    operation = arguments.get("operation")
    if operation == "list":
        return [_summary(file) for file in _active(manager).files() if file.path in visible]
    if operation == "search":
        return await _search(manager, arguments, visible)
    if operation == "replace":
        return await _replace(manager, arguments, visible)
    return await handler(manager, arguments)


def is_safe(arguments: Mapping[str, Any]) -> bool:
    """Whether a call only reads: its ``operation`` is ``list``, ``read`` or ``search``."""
    operation = arguments.get("operation")
    return isinstance(operation, str) and operation in SAFE_OPERATIONS


def create_workspace_tool(context: ToolContext, directory: Directory | None = None) -> Tool:
    """The ``workspace`` tool bound to this run's ``agent_context.workspaces``; its
    ``list_workspaces`` reads ``directory`` (by default the user's stored workspaces)."""
    agent_context = context.agent_context
    user_id = context.user_id
    listing: Directory = directory or (lambda: owned_workspaces(user_id))

    async def execute(arguments: Mapping[str, Any]) -> Any:
        if arguments.get("operation") == "list_workspaces":
            return await _list_workspaces(agent_context.workspaces, listing)
        # Read the registry and the scope per call: the runtime may swap either mid-run.
        scope = agent_context.scope
        visible = frozenset(scope.files) if scope is not None and scope.files is not None else None
        return await run_operation(agent_context.workspaces, arguments, visible)

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=is_safe
    )
