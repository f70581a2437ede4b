"""Guard a kit ``Tool``: validate the model's arguments against its schema, bound its time.

The kit's ``ToolManager`` turns any exception a handler raises into the ``ToolResult.error``
the model reads, so both guards speak by raising, with messages a model can act on:
``invalid arguments: 'path' is a required property`` or ``timed out after 30s``. A tool whose
schema declares ``timeout`` runs under the model's asked limit within its own
(``time_limits``); a timed-out call is cancelled and given its cleanup window to end.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable, Mapping
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, ValidationError, best_match

from orkestrel.core import Tool, create_tool

from .time_limits import asked_limit, declares_timeout

__all__ = [
    "ToolArgumentError",
    "ToolTimeoutError",
    "argument_error",
    "check_arguments",
    "format_seconds",
    "guard_tool",
]


class ToolArgumentError(ValueError):
    """The model's arguments do not match the tool's JSON Schema."""


class ToolTimeoutError(TimeoutError):
    """A tool call ran past its time limit."""


def format_seconds(seconds: float) -> str:
    """``30.0`` → ``"30s"``, ``0.25`` → ``"0.25s"``."""
    return f"{seconds:g}s"


def argument_error(error: ValidationError) -> ToolArgumentError:
    """The message for one schema violation, with its JSON path when it is not the root."""
    where = error.json_path
    prefix = "invalid arguments" if where == "$" else f"invalid arguments at {where}"
    return ToolArgumentError(f"{prefix}: {error.message}")


def _plain(value: Any) -> Any:
    # jsonschema checks "object" with isinstance(dict): a read-only Mapping from a provider
    # adapter would otherwise fail every schema.
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


@functools.lru_cache(maxsize=256)
def _compiled(schema: str) -> Draft202012Validator:
    parsed = json.loads(schema)
    Draft202012Validator.check_schema(parsed)
    return Draft202012Validator(parsed)


def _as_dict(value: object) -> dict[Any, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _validator(parameters: Mapping[str, Any]) -> Draft202012Validator:
    """Check and compile a schema once per process (tools are rebuilt on every run), keyed
    by its canonical JSON (``_as_dict`` reads a read-only mapping as ``_plain`` would)."""
    return _compiled(json.dumps(parameters, sort_keys=True, default=_as_dict))


def check_arguments(parameters: Mapping[str, Any] | None, arguments: Mapping[str, Any]) -> None:
    """Raise ``ToolArgumentError`` when ``arguments`` do not match the ``parameters`` schema
    (a person's edit of a held call); an unusable schema checks nothing."""
    if parameters is None:
        return
    try:
        validator = _validator(parameters)
    except (SchemaError, TypeError, ValueError):
        return
    error = best_match(validator.iter_errors(_plain(arguments)))
    if error is not None:
        raise argument_error(error)


# Calls that outlived their cleanup window, kept referenced until they end on their own.
_left_behind: set[asyncio.Future[Any]] = set()


async def _bounded(run: Awaitable[Any], limit: float, cleanup: float) -> Any:
    """``run``'s value, or ``ToolTimeoutError`` once ``limit`` passed: cancelled then, it has
    ``cleanup`` seconds to end before it is left behind (a coroutine cannot be killed)."""
    task = asyncio.ensure_future(run)
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
    except BaseException:
        # The caller was cancelled: so is the call, and the caller waits for it as before.
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        raise
    if task in done:
        # A handler's own TimeoutError is its own, not ours: it is the call's error.
        return task.result()
    task.cancel()
    ended = False
    if cleanup > 0:
        done, _ = await asyncio.wait({task}, timeout=cleanup)
        ended = task in done
    message = f"timed out after {format_seconds(limit)}"
    if ended:
        if not task.cancelled():
            task.exception()  # retrieved: what it raised while cleaning up is not news
    else:
        _left_behind.add(task)
        task.add_done_callback(_left_behind.discard)
        message += (
            f"; it did not stop within its {format_seconds(cleanup)} cleanup window"
            if cleanup > 0
            else ""
        )
    raise ToolTimeoutError(message)


def guard_tool(
    tool: Tool,
    *,
    timeout: float | None = None,
    cleanup: float = 0.0,
    asked: bool | None = None,
) -> Tool:
    """A copy of ``tool`` whose handler validates arguments first and runs under ``timeout``.

    The schema is checked and compiled once, here; an invalid schema raises
    ``jsonschema.SchemaError`` now rather than on every call. A violation never reaches the
    wrapped handler. ``timeout`` is in seconds (``None``: unbounded); ``asked`` (by default:
    whether the schema declares ``timeout``) lets a call's ``timeout`` argument shorten it;
    ``cleanup``: seconds a timed-out call has to end after it is cancelled.
    """
    if timeout is not None and not timeout > 0:
        raise ValueError(f"timeout must be > 0 seconds, not {timeout!r}")
    validator: Draft202012Validator | None = None
    if tool.parameters is not None:
        validator = _validator(tool.parameters)
    honoured = declares_timeout(tool.parameters) if asked is None else asked

    async def execute(arguments: Mapping[str, Any]) -> Any:
        if validator is not None:
            error = best_match(validator.iter_errors(_plain(arguments)))
            if error is not None:
                raise argument_error(error)
        if timeout is None:
            return await tool.run(arguments)
        limit = asked_limit(arguments, timeout) if honoured else timeout
        return await _bounded(tool.run(arguments), limit, cleanup)

    return create_tool(
        name=tool.name,
        execute=execute,
        description=tool.description,
        summary=tool.summary,
        parameters=tool.parameters,
        safe=tool.safe,
    )
