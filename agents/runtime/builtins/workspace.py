"""The ``workspace`` built-in: the seed's workspace-editing tool, one flat ``operation`` surface.

It drives ``context.agent_context.workspaces`` (the same registry the prompt renders), so an
edit shows in the next turn's ``## Workspace`` section. Small models handle flat arguments
better than nested ones, so a range is four 1-based ints lifted with ``range_of``. Every fault
is a ``WorkspaceError`` whose message starts with its code (``MODALITY: ...``), which the kit's
``ToolManager`` hands the model as the tool error.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
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

__all__ = [
    "DESCRIPTION",
    "NAME",
    "OPERATIONS",
    "PARAMETERS",
    "SAFE",
    "SEARCH_LIMIT",
    "Operation",
    "create_workspace_tool",
    "run_operation",
]

NAME = "workspace"
SAFE = False  # it writes, moves and removes files
SEARCH_LIMIT = 100  # matches returned by one search: keeps a result small enough to read

Operation = Literal[
    "list", "read", "write", "prepend", "append", "search", "replace", "move", "remove", "switch"
]
OPERATIONS: tuple[str, ...] = get_args(Operation)
_RANGE_KEYS = ("start_line", "start_column", "end_line", "end_column")

DESCRIPTION = (
    "Read and edit the files of the active workspace (shown to you in the Workspace section). "
    "Choose an operation: list (every file); read (path; with start_line, start_column, "
    "end_line, end_column for a span); write (path, content; with a range it replaces that "
    "span); prepend / append (path, content); search (query, regex); replace (query, "
    "replacement, regex: every match in every file); move (path, to); remove (path); switch "
    "(workspace: make another workspace active). Lines and columns count from 1; a range's "
    "end is exclusive."
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
    if span is None:
        workspace.write(path, content)
    else:
        workspace.write(path, content, span)
    return _summary(_existing(workspace, path))


def _extend(verb: Literal["prepend", "append"]) -> Handler:
    async def handle(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
        workspace = _active(manager)
        path, content = _need(arguments, verb, "path", "content")
        getattr(workspace, verb)(path, content)
        return _summary(_existing(workspace, path))

    return handle


async def _search(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    (query,) = _need(arguments, "search", "query")
    regex = bool(arguments.get("regex"))
    # One past the cap tells a full page from a truncated one.
    found = workspace.search(query, regex=regex, limit=SEARCH_LIMIT + 1)
    matches = [
        {
            "path": match.path,
            "line": match.line,
            "column": match.column,
            "length": match.length,
            "content": match.content,
        }
        for match in found[:SEARCH_LIMIT]
    ]
    return {"query": query, "matches": matches, "truncated": len(found) > SEARCH_LIMIT}


async def _replace(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    query, replacement = _need(arguments, "replace", "query", "replacement")
    tally = workspace.replace(query, replacement, regex=bool(arguments.get("regex")))
    return {"query": tally.query, "replaced": tally.replaced, "files": tally.files}


async def _move(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    path, target = _need(arguments, "move", "path", "to")
    _existing(workspace, path)
    workspace.move(path, target)
    return {"from": path, "to": target}


async def _remove(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    workspace = _active(manager)
    (path,) = _need(arguments, "remove", "path")
    _existing(workspace, path)
    workspace.remove(path)
    return {"path": path, "removed": True}


async def _switch(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    (id,) = _need(arguments, "switch", "workspace")
    # ``open`` also hydrates a stored workspace the registry has not loaded yet.
    workspace = await manager.open(id)
    if workspace is None:
        known = [one.id for one in manager.workspaces()]
        raise _fault(f"no workspace {id!r}; known: {known}", workspace=id)
    return {"workspace": workspace.id, "files": workspace.count}


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


async def run_operation(manager: WorkspaceManager, arguments: Mapping[str, Any]) -> Any:
    """Dispatch one call's ``operation`` over ``manager``; faults raise ``WorkspaceError``."""
    operation = arguments.get("operation")
    handler = _HANDLERS.get(operation) if isinstance(operation, str) else None
    if handler is None:
        raise _fault(f"unknown operation {operation!r}; one of {list(OPERATIONS)}")
    try:
        return await handler(manager, arguments)
    except WorkspaceError as error:
        if error.message.startswith(f"{error.code}:"):
            raise
        # The kit's own faults (MODALITY, PATTERN, RANGE) carry the code the model keys on.
        # ``OrkestrelError`` types ``code`` as ``str``; a ``WorkspaceError``'s is always one of
        # ``WorkspaceErrorCode`` (its constructor takes no other).
        code = cast(WorkspaceErrorCode, error.code)
        raise WorkspaceError(code, f"{code}: {error.message}", context=error.context) from error
    except (TypeError, ValueError) as error:
        # Argument shapes the schema let through (an empty path, a NUL) are tool faults too.
        raise _fault(str(error), operation=operation) from error


def create_workspace_tool(context: ToolContext) -> Tool:
    """The ``workspace`` tool bound to this run's ``agent_context.workspaces``."""
    agent_context = context.agent_context

    async def execute(arguments: Mapping[str, Any]) -> Any:
        # Read the registry per call: the runtime may swap ``context.workspaces`` mid-run.
        return await run_operation(agent_context.workspaces, arguments)

    return create_tool(
        name=NAME, execute=execute, description=DESCRIPTION, parameters=PARAMETERS, safe=SAFE
    )
