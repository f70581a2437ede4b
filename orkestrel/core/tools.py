"""The tool registry: ``Tool`` binds a schema to a handler, ``ToolManager`` dispatches calls.

Dispatch isolates every call: an unknown name, malformed arguments or a handler that raises
each resolve to a ``ToolResult`` carrying ``error``, so one bad call never fails a batch and a
tool error never escapes to the agent loop. Cancellation is not an error and still propagates.

A handler may return a *payload* instead of a bare value (``read_payload`` says exactly which
dicts are payloads): ``{"result", "system"}`` answers the model with ``result`` and appends
``system`` as system messages after the turn's tool messages; ``{"result", "display"}`` shows
``display`` to the user on the tool card and never sends it to the model.

A tool's ``safe`` says whether a call is read-only: a bool, or a predicate over the call's
arguments (a workspace tool's ``read`` is safe, its ``write`` is not). The agent loop runs
contiguous safe calls of a turn concurrently and every other call alone, in the model's order;
in read-only mode only safe calls run.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import types
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict, overload

from .messages import ToolCall, ToolCallInput, ToolResult
from .provider import ToolDefinition

__all__ = [
    "Tool",
    "ToolCallResult",
    "ToolHandler",
    "ToolInput",
    "ToolManager",
    "ToolResultContent",
    "build_tool_result",
    "create_tool",
    "create_tool_manager",
]

ToolHandler = Callable[..., Any | Awaitable[Any]]
"""A tool handler: called with the call's arguments mapping (or with nothing when it takes no
positional parameter); may be sync or async."""

ToolSafety = bool | Callable[[Mapping[str, Any]], bool]
"""Whether a tool's calls are read-only: a bool, or a predicate called with a call's arguments
(``True`` means read-only; anything else, or a predicate that raises, means a write)."""

PAYLOAD_KEYS: tuple[frozenset[str], ...] = (
    frozenset({"result", "system"}),
    frozenset({"result", "display"}),
    frozenset({"result", "system", "display"}),
)
"""The key sets a dict must have exactly to be read as a payload rather than a value."""


def _takes_arguments(handler: Callable[..., Any]) -> bool:
    # A handler like ``lambda: time.time()`` ignores the arguments, as JS handlers may.
    if (
        type(handler) is types.FunctionType
        and not hasattr(handler, "__wrapped__")
        and not hasattr(handler, "__signature__")
    ):
        # A plain function's code says it, without building a signature (tools are made
        # afresh for every run).
        code = handler.__code__
        return code.co_argcount > 0 or bool(code.co_flags & inspect.CO_VARARGS)
    try:
        parameters = inspect.signature(handler).parameters.values()
    except (TypeError, ValueError):
        return True
    positional = (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.VAR_POSITIONAL,
    )
    return any(parameter.kind in positional for parameter in parameters)


@dataclass(frozen=True, slots=True)
class Tool:
    """A registered tool: the schema the model sees bound to the handler that runs a call.

    Attributes:
        name: The tool's unique name.
        execute: The handler, sync or async, called with the call's ``arguments`` mapping.
        description: Full description; advertised unless ``summary`` is set.
        summary: A lean advertisement standing in for ``description`` in ``definitions()``.
        parameters: JSON-Schema of the arguments, kept by reference.
        safe: Whether the tool is read-only (no side effects): a bool, or a predicate over a
            call's arguments (``is_safe`` asks it). The definition the model sees is the same
            either way.
        strict: The ``strict`` flag of the definition the model sees (``None``: none sent).
    """

    name: str
    execute: ToolHandler
    description: str | None = None
    summary: str | None = None
    parameters: Mapping[str, Any] | None = None
    safe: ToolSafety = False
    strict: bool | None = None
    # Decided once here: ``run`` is on the dispatch hot path.
    _is_async: bool = field(init=False, repr=False, compare=False)
    _takes_arguments: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("tool name must be a non-empty string")
        if not callable(self.execute):
            raise TypeError(f"tool {self.name!r} execute must be callable")
        for label in ("description", "summary"):
            value = getattr(self, label)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"tool {self.name!r} {label} must be a string")
        if self.parameters is not None and not isinstance(self.parameters, Mapping):
            raise TypeError(f"tool {self.name!r} parameters must be a mapping")
        if not isinstance(self.safe, bool) and not callable(self.safe):
            raise TypeError(f"tool {self.name!r} safe must be a bool or a callable")
        if self.strict is not None and not isinstance(self.strict, bool):
            raise TypeError(f"tool {self.name!r} strict must be a bool")
        object.__setattr__(self, "_is_async", inspect.iscoroutinefunction(self.execute))
        object.__setattr__(self, "_takes_arguments", _takes_arguments(self.execute))

    def is_safe(self, arguments: Mapping[str, Any]) -> bool:
        """Whether a call with ``arguments`` is read-only.

        A predicate must return ``True`` exactly; any other answer, or an exception, fails
        closed (the call counts as a write).
        """
        safe = self.safe
        if safe is True or safe is False:
            return safe
        try:
            return safe(arguments) is True
        except Exception:  # noqa: BLE001 - a broken predicate must not make a write look safe
            return False

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """Run the handler with ``arguments`` (forwarded as-is), awaiting it when async."""
        handler = self.execute
        if self._is_async:
            return await (handler(arguments) if self._takes_arguments else handler())
        result = handler(arguments) if self._takes_arguments else handler()
        # A sync callable may still hand back an awaitable (a lambda around a coroutine).
        if type(result) in _PLAIN:
            return result
        if inspect.isawaitable(result):
            return await result
        return result


ToolInput = Tool | Mapping[str, Any]
# Results that can never be awaitable, checked before the slower ``inspect.isawaitable``.
_PLAIN = frozenset({int, float, str, bool, type(None), dict, list, tuple})


def create_tool(
    *,
    name: str,
    execute: ToolHandler,
    description: str | None = None,
    summary: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    safe: ToolSafety = False,
) -> Tool:
    """Create a ``Tool``; raises ``TypeError`` naming the bad field."""
    return Tool(name, execute, description, summary, parameters, safe)


def _to_tool(value: ToolInput) -> Tool:
    if isinstance(value, Tool):
        return value
    if isinstance(value, Mapping):
        unknown = set(value) - {"name", "execute", "description", "summary", "parameters", "safe"}
        if unknown:
            raise TypeError(f"unknown tool fields: {sorted(unknown)}")
        return create_tool(**value)
    raise TypeError(f"tool must be a Tool or a mapping, not {type(value).__name__}")


def _definition(tool: Tool) -> ToolDefinition:
    # A lean ``summary`` stands in for the full ``description`` in what the model sees.
    description = tool.summary if tool.summary is not None else tool.description
    return ToolDefinition(tool.name, description, tool.parameters, tool.strict)


def _error_message(error: BaseException) -> str:
    try:
        message = str(error)
    except Exception:  # noqa: BLE001 - a broken __str__ must not escape isolation
        message = ""
    return message or type(error).__name__


class ToolManager:
    """The tool registry: insertion-ordered by name, with per-call error-isolated ``execute``."""

    __slots__ = ("_definitions", "_tools")

    def __init__(self, tools: ToolInput | Sequence[ToolInput] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._definitions: tuple[ToolDefinition, ...] | None = None
        if tools is not None:
            self.add(tools)

    @property
    def count(self) -> int:
        """How many tools are registered."""
        return len(self._tools)

    def add(self, tools: ToolInput | Sequence[ToolInput]) -> None:
        """Register one tool or a list; a re-add of a name overwrites it in its original slot."""
        items = [_to_tool(tools)] if isinstance(tools, Tool | Mapping) else _to_tools(tools)
        for tool in items:
            self._tools[tool.name] = tool
        self._definitions = None

    def tool(self, name: str) -> Tool | None:
        """The tool registered as ``name``, or ``None``."""
        return self._tools.get(name)

    def tools(self) -> tuple[Tool, ...]:
        """Every registered tool, in insertion order."""
        return tuple(self._tools.values())

    def definitions(self) -> tuple[ToolDefinition, ...]:
        """Each tool's ``ToolDefinition`` (handler stripped), in insertion order."""
        if self._definitions is None:
            self._definitions = tuple(_definition(tool) for tool in self._tools.values())
        return self._definitions

    @overload
    async def execute(self, calls: ToolCallInput) -> ToolResult: ...
    @overload
    async def execute(self, calls: Sequence[ToolCallInput]) -> list[ToolResult]: ...
    async def execute(
        self, calls: ToolCallInput | Sequence[ToolCallInput]
    ) -> ToolResult | list[ToolResult]:
        """Run one call, or a list concurrently; always resolves ``ToolResult``(s) in input order.

        Success sets ``value``; an unknown name, non-mapping ``arguments`` or a handler that
        raises sets ``error``. ``asyncio.CancelledError`` propagates (a cancel is not an error).
        """
        if type(calls) is list and len(calls) == 1:
            # The agent loop's common case: one call, no gather.
            return [await self._dispatch(calls[0])]
        if isinstance(calls, ToolCall | Mapping):
            return await self._dispatch(calls)
        if isinstance(calls, str | bytes) or not isinstance(calls, Sequence):
            raise TypeError(f"calls must be a tool call or a list, not {type(calls).__name__}")
        if len(calls) <= 1:
            return [await self._dispatch(call) for call in calls]
        tasks = [asyncio.ensure_future(self._dispatch(call)) for call in calls]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            # Only a cancel (or interpreter exit) gets here; leave no orphaned handler running.
            for task in tasks:
                task.cancel()
            raise

    def remove(self, names: str | Sequence[str]) -> bool:
        """Remove one tool by name, or a list; ``True`` when any was removed."""
        targets = (names,) if isinstance(names, str) else names
        removed = False
        for name in targets:
            if self._tools.pop(name, None) is not None:
                removed = True
        if removed:
            self._definitions = None
        return removed

    def clear(self) -> None:
        """Remove every tool."""
        self._tools.clear()
        self._definitions = None

    async def _dispatch(self, call: ToolCallInput) -> ToolResult:
        # A mapping call is untrusted: its fields are checked before use.
        call_id: object
        name: object
        arguments: object
        if type(call) is ToolCall or isinstance(call, ToolCall):
            call_id, name, arguments = call.id, call.name, call.arguments
            if call.error is not None:
                return ToolResult(
                    call_id, name, error=f"invalid arguments for {name}: {call.error}"
                )
        elif isinstance(call, Mapping):
            call_id, name, arguments = call.get("id"), call.get("name"), call.get("arguments", {})
            if not isinstance(call_id, str) or not isinstance(name, str):
                return ToolResult(
                    call_id if isinstance(call_id, str) else "",
                    name if isinstance(name, str) else "",
                    error="invalid tool call: id and name must be strings",
                )
        else:
            return ToolResult("", "", error=f"invalid tool call: {type(call).__name__}")
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(call_id, name, error=f"tool not found: {name}")
        if type(arguments) is not dict and not isinstance(arguments, Mapping):
            return ToolResult(
                call_id, name, error=f"invalid arguments for {name}: expected a JSON object"
            )
        try:
            value = await tool.run(arguments)
        except Exception as error:  # noqa: BLE001 - per-call isolation is the contract
            return ToolResult(call_id, name, error=_error_message(error))
        if isinstance(value, dict) and "result" in value:
            payload = read_payload(value)
            if payload is not None:
                result, system, display = payload
                return ToolResult(call_id, name, value=result, display=display, system=system)
        return ToolResult(call_id, name, value=value)


def read_payload(value: object) -> tuple[Any, tuple[str, ...] | None, Any] | None:
    """Read a handler's return as a payload: ``(result, system, display)``, or ``None``.

    A payload is a ``dict`` whose keys are exactly ``{"result", "system"}``,
    ``{"result", "display"}`` or ``{"result", "system", "display"}``, and whose ``system``
    (when present) is ``None``, a string or a list/tuple of strings. Anything else (a dict
    with any other key, ``{"result": ...}`` alone, a ``system`` of another type) is an
    ordinary value and reaches the model whole. Empty ``system`` texts are dropped; ``None``
    means there are none.
    """
    if not isinstance(value, dict) or frozenset(value) not in PAYLOAD_KEYS:
        return None
    raw = value.get("system")
    system: tuple[str, ...] | None
    if raw is None:
        system = None
    elif isinstance(raw, str):
        system = (raw,) if raw else None
    elif isinstance(raw, list | tuple) and all(isinstance(text, str) for text in raw):
        kept = tuple(text for text in raw if text)
        system = kept if kept else None
    else:
        return None
    return value["result"], system, value.get("display")


def _to_tools(values: Sequence[ToolInput]) -> list[Tool]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise TypeError(f"tools must be a Tool, a mapping or a list, not {type(values).__name__}")
    # Convert the whole batch first so a bad item leaves the registry untouched.
    return [_to_tool(value) for value in values]


def create_tool_manager(tools: ToolInput | Sequence[ToolInput] | None = None) -> ToolManager:
    """Create a ``ToolManager`` (empty unless ``tools`` are given)."""
    return ToolManager(tools)


class ToolResultContent(TypedDict):
    """One text block of an MCP-shaped tool response."""

    type: Literal["text"]
    text: str


class ToolCallResult(TypedDict):
    """The MCP ``CallToolResult`` shape; ``isError`` is present only on failure."""

    content: list[ToolResultContent]
    isError: NotRequired[bool]


def build_tool_result(result: ToolResult | Mapping[str, Any]) -> ToolCallResult:
    """Map a ``ToolResult`` to the MCP ``CallToolResult`` shape.

    An error becomes its text with ``isError: True``; a value becomes its JSON text
    (non-ASCII kept; a value JSON cannot encode falls back to ``str``).
    """
    if isinstance(result, ToolResult):
        error, value = result.error, result.value
    elif isinstance(result, Mapping):
        error, value = result.get("error"), result.get("value")
    else:
        raise TypeError(f"result must be a ToolResult or a mapping, not {type(result).__name__}")
    if error is not None:
        return {"content": [{"type": "text", "text": str(error)}], "isError": True}
    text = json.dumps(value, ensure_ascii=False, default=str)
    return {"content": [{"type": "text", "text": text}]}
