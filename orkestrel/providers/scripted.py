"""``ScriptedProvider``: a deterministic ``Provider`` that plays a script of turns.

The test double for everything above the model boundary (and the engine of the demo model):
each call plays the next ``ScriptedTurn`` — its thinking and content deltas, then the
assembled ``ProviderResult`` — and is recorded on ``calls`` so a test can assert what the
model was asked.
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict, Unpack

from orkestrel.core.abort import AbortSignal
from orkestrel.core.errors import ProviderAbortError, ProviderError
from orkestrel.core.messages import Message, ToolCall, mint_id
from orkestrel.core.provider import (
    ContentDelta,
    ContextFormat,
    ProviderResult,
    ProviderStreamItem,
    ProviderStreamOptions,
    ThinkingDelta,
    ToolDefinition,
)
from orkestrel.core.think import ThinkSplitter
from orkestrel.core.usage import TokenUsage, to_usage

__all__ = ["ScriptedCall", "ScriptedFallback", "ScriptedProvider", "ScriptedTurn", "TurnInput"]

_TURN_FIELDS = frozenset(
    (
        "content",
        "thinking",
        "tools",
        "usage",
        "error",
        "error_after",
        "delay",
        "split_think",
        "stop_reason",
    )
)


def _deltas(value: object, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,) if value else ()
    if isinstance(value, Sequence) and all(isinstance(item, str) for item in value):
        return tuple(item for item in value if item)
    raise TypeError(f"turn {name} must be a string or a list of strings")


def _tool_call(value: object) -> ToolCall:
    if isinstance(value, ToolCall):
        return value
    if not isinstance(value, Mapping):
        kind = type(value).__name__
        raise TypeError(f"turn tools items must be ToolCall or mappings, not {kind}")
    name, arguments, call_id = value.get("name"), value.get("arguments", {}), value.get("id")
    if not isinstance(name, str) or not name:
        raise TypeError("turn tools name must be a non-empty string")
    if not isinstance(arguments, Mapping):
        raise TypeError("turn tools arguments must be a mapping")
    if call_id is not None and not isinstance(call_id, str):
        raise TypeError("turn tools id must be a string")
    error = value.get("error")
    if error is not None and not isinstance(error, str):
        raise TypeError("turn tools error must be a string")
    return ToolCall(call_id or mint_id(), name, dict(arguments), error)


@dataclass(frozen=True, slots=True)
class ScriptedTurn:
    """One scripted model turn.

    Attributes:
        content: The answer, one delta (a string) or several (a list of strings).
        thinking: Reasoning deltas, streamed as ``ThinkingDelta`` before the content.
        tools: Tool calls (``ToolCall`` or ``{name, arguments, id?}``); a missing id is
            minted once, when the turn is built.
        usage: Token usage reported with the result (``TokenUsage`` or a mapping).
        error: An exception raised before any delta, or after them with ``error_after``.
        error_after: Raise ``error`` once the deltas have streamed.
        delay: Seconds to wait before each delta (0: never sleeps); an abort cuts it short.
        split_think: Route ``content`` through a ``ThinkSplitter`` as raw wire text.
        stop_reason: Reported on the result as-is.
    """

    # Inputs are wide; once built, lists are tuples, tools are ``ToolCall``s, usage a
    # ``TokenUsage``.
    content: str | Sequence[str] = ""
    thinking: str | Sequence[str] | None = None
    tools: Sequence[ToolCall | Mapping[str, Any]] | None = None
    usage: TokenUsage | Mapping[str, int] | None = None
    error: BaseException | None = None
    error_after: bool = False
    delay: float = 0.0
    split_think: bool = False
    stop_reason: str | None = None
    # Normalized once here so playing a turn is a walk over ready-made objects.
    _content: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _thinking: tuple[str, ...] = field(init=False, repr=False, compare=False)
    _items: tuple[ContentDelta | ThinkingDelta, ...] = field(init=False, repr=False, compare=False)
    _result: ProviderResult = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        content = _deltas(self.content, "content")
        thinking = () if self.thinking is None else _deltas(self.thinking, "thinking")
        tools: tuple[ToolCall, ...] | None = None
        if self.tools is not None:
            if isinstance(self.tools, str | bytes | Mapping) or not isinstance(
                self.tools, Sequence
            ):
                raise TypeError("turn tools must be a list of tool calls")
            # An empty list means no calls, reported as ``None`` like a real provider.
            tools = tuple(_tool_call(call) for call in self.tools) if self.tools else None
        usage = None if self.usage is None else to_usage(self.usage)
        if self.error is not None and not isinstance(self.error, BaseException):
            raise TypeError("turn error must be an exception instance")
        delay = self.delay
        if isinstance(delay, bool) or not isinstance(delay, int | float):
            raise TypeError("turn delay must be a number of seconds")
        if math.isnan(delay) or delay < 0:
            raise ValueError(f"turn delay must be a non-negative number, not {delay!r}")
        if self.stop_reason is not None and not isinstance(self.stop_reason, str):
            raise TypeError("turn stop_reason must be a string")
        # Lists become tuples so a turn stays immutable (and hashable) like its siblings.
        if not isinstance(self.content, str):
            setattr_(self, "content", tuple(self.content))
        if self.thinking is not None and not isinstance(self.thinking, str):
            setattr_(self, "thinking", tuple(self.thinking))
        setattr_(self, "tools", tools)
        setattr_(self, "usage", usage)
        setattr_(self, "_content", content)
        setattr_(self, "_thinking", thinking)
        items: list[ContentDelta | ThinkingDelta] = [ThinkingDelta(text) for text in thinking]
        items.extend(ContentDelta(text) for text in content)
        setattr_(self, "_items", tuple(items))
        setattr_(
            self,
            "_result",
            ProviderResult(
                "".join(content),
                "".join(thinking) or None,
                tools,
                usage,
                self.stop_reason,
            ),
        )


TurnInput = ScriptedTurn | Mapping[str, Any] | str
ScriptedFallback = Callable[[tuple[Message, ...]], TurnInput | Awaitable[TurnInput]]


def _to_turn(value: object) -> ScriptedTurn:
    if isinstance(value, ScriptedTurn):
        return value
    if isinstance(value, str):
        return ScriptedTurn(content=value)
    if isinstance(value, Mapping):
        unknown = set(value) - _TURN_FIELDS
        if unknown:
            raise TypeError(f"turn has unknown fields: {sorted(map(str, unknown))}")
        return ScriptedTurn(**value)
    raise TypeError(f"turn must be a ScriptedTurn, a mapping or a string, not {value!r}")


@dataclass(frozen=True, slots=True)
class ScriptedCall:
    """One recorded call: what the provider was handed."""

    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...] | None = None
    options: ProviderStreamOptions | None = None


def _wake(future: asyncio.Future[None], _reason: object = None) -> None:
    if not future.done():
        future.set_result(None)


async def _sleep(seconds: float, signal: AbortSignal) -> None:
    """Sleep, but wake as soon as ``signal`` fires; leaves no task or timer behind."""
    if signal.aborted:
        return
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()
    handle = loop.call_later(seconds, _wake, future)

    def listener(reason: object) -> None:
        _wake(future)

    signal.add_listener(listener)
    try:
        await future
    finally:
        handle.cancel()
        signal.remove_listener(listener)


class ScriptedOptions(TypedDict, total=False):
    """The keyword options of ``ScriptedProvider`` (after its ``script``)."""

    name: str
    id: str | None
    format: ContextFormat | None
    fallback: ScriptedFallback | None


class ScriptedProvider:
    """A ``Provider`` that plays ``script`` turn by turn and records every call.

    Args:
        script: The turns, in order (``ScriptedTurn``, a mapping of its fields, or a string
            as shorthand for a content-only turn).
        name: The provider's name.
        id: The provider's id (defaults to ``name``).
        format: An optional ``ContextFormat``.
        fallback: Called with the messages once the script is exhausted, to produce the next
            turn (may be async); without it an exhausted script raises ``ProviderError``.
    """

    def __init__(
        self,
        script: Sequence[TurnInput] = (),
        *,
        name: str = "scripted",
        id: str | None = None,
        format: ContextFormat | None = None,
        fallback: ScriptedFallback | None = None,
    ) -> None:
        if isinstance(script, str | bytes | Mapping) or not isinstance(script, Sequence):
            raise TypeError("script must be a list of turns")
        if not isinstance(name, str) or not name:
            raise TypeError("name must be a non-empty string")
        if id is not None and (not isinstance(id, str) or not id):
            raise TypeError("id must be a non-empty string")
        if format is not None and not isinstance(format, ContextFormat):
            raise TypeError("format must be a ContextFormat")
        if fallback is not None and not callable(fallback):
            raise TypeError("fallback must be callable")
        self._script = tuple(_to_turn(turn) for turn in script)
        self._position = 0
        self._name = name
        self._id = id or name
        self._format = format
        self._fallback = fallback
        self.calls: list[ScriptedCall] = []

    @classmethod
    def from_texts(
        cls, texts: Sequence[str], **kwargs: Unpack[ScriptedOptions]
    ) -> ScriptedProvider:
        """A provider answering each call with the next of ``texts``."""
        if isinstance(texts, str) or not all(isinstance(text, str) for text in texts):
            raise TypeError("texts must be a list of strings")
        return cls([ScriptedTurn(content=text) for text in texts], **kwargs)

    @property
    def id(self) -> str:
        return self._id

    @property
    def name(self) -> str:
        return self._name

    @property
    def format(self) -> ContextFormat | None:
        return self._format

    @property
    def remaining(self) -> int:
        """How many scripted turns have not been played yet."""
        return len(self._script) - self._position

    def assert_consumed(self) -> None:
        """Raise ``AssertionError`` unless every scripted turn was played."""
        left = self.remaining
        if left:
            raise AssertionError(
                f"scripted provider {self._name!r} has {left} unplayed turn(s) "
                f"of {len(self._script)}"
            )

    async def generate(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult:
        """Play the next turn whole; raises what ``stream`` raises."""
        result: ProviderResult | None = None
        async for item in self.stream(messages, signal, tools, options):
            if isinstance(item, ProviderResult):
                result = item
        if result is None:  # unreachable: stream always ends with its result
            raise ProviderError("stream ended without a result", provider=self._name)
        return result

    async def stream(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncIterator[ProviderStreamItem]:
        """Play the next turn: thinking deltas, content deltas, then the ``ProviderResult``."""
        call = ScriptedCall(tuple(messages), tuple(tools) if tools is not None else None, options)
        self.calls.append(call)
        if signal.aborted:
            raise ProviderAbortError(ProviderResult(""), signal.reason)
        turn = await self._next_turn(call.messages)
        if turn.error is not None and not turn.error_after:
            raise turn.error
        if turn.split_think:
            async for item in self._play_split(turn, signal):
                yield item
            return
        items, delay, index = turn._items, turn.delay, 0
        for item in items:
            if delay:
                await _sleep(delay, signal)
            if signal.aborted:
                raise ProviderAbortError(_partial(items, index), signal.reason)
            yield item
            index += 1
        if signal.aborted:
            raise ProviderAbortError(_partial(items, index), signal.reason)
        if turn.error is not None:
            raise turn.error
        yield turn._result

    async def _play_split(
        self, turn: ScriptedTurn, signal: AbortSignal
    ) -> AsyncIterator[ProviderStreamItem]:
        # The raw content is wire text: reasoning inside <think> goes to the thinking channel.
        splitter = ThinkSplitter()
        native: list[str] = []
        delay = turn.delay

        def partial() -> ProviderResult:
            thinking = "".join(native) + splitter.thinking
            return ProviderResult(splitter.content, thinking or None)

        for text in turn._thinking:
            if delay:
                await _sleep(delay, signal)
            if signal.aborted:
                raise ProviderAbortError(partial(), signal.reason)
            yield ThinkingDelta(text)
            native.append(text)
        for raw in turn._content:
            if delay:
                await _sleep(delay, signal)
            if signal.aborted:
                raise ProviderAbortError(partial(), signal.reason)
            clean = splitter.split(raw)
            if splitter.last_thinking:
                yield ThinkingDelta(splitter.last_thinking)
            if clean:
                yield ContentDelta(clean)
        tail = splitter.flush()
        if splitter.last_thinking:
            yield ThinkingDelta(splitter.last_thinking)
        if tail:
            yield ContentDelta(tail)
        if signal.aborted:
            raise ProviderAbortError(partial(), signal.reason)
        if turn.error is not None:
            raise turn.error
        thinking = "".join(native) + splitter.thinking
        # The turn's own result holds its normalized calls and usage.
        done = turn._result
        yield ProviderResult(
            splitter.content, thinking or None, done.tools, done.usage, done.stop_reason
        )

    async def _next_turn(self, messages: tuple[Message, ...]) -> ScriptedTurn:
        if self._position < len(self._script):
            turn = self._script[self._position]
            self._position += 1
            return turn
        if self._fallback is None:
            raise ProviderError(
                f"script exhausted after {len(self._script)} turns", provider=self._name
            )
        produced = self._fallback(messages)
        if inspect.isawaitable(produced):
            produced = await produced
        return _to_turn(produced)

    def __repr__(self) -> str:
        return f"<ScriptedProvider {self._name!r} remaining={self.remaining}>"


def _partial(items: tuple[ContentDelta | ThinkingDelta, ...], played: int) -> ProviderResult:
    """What the first ``played`` deltas assembled to (no tools: the turn never finished)."""
    content = "".join(item.text for item in items[:played] if isinstance(item, ContentDelta))
    thinking = "".join(item.text for item in items[:played] if isinstance(item, ThinkingDelta))
    return ProviderResult(content, thinking or None)
