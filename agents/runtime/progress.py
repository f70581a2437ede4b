"""How far an agent job is while it runs: its progress, counted in memory from its agent.

``Progress`` is the one shape (stored in ``AgentJob.progress``, shown on a delegate call's card
and on the job's page): model requests started (``turns``), tool calls ended (``tools``) and
the latest one's tool (``last_tool``), tokens the model reported (``tokens``: each request's
usage, once it ends) and the end of the answer being written (``text``: its last
``TEXT_CHARS`` characters). A ``ProgressMeter`` counts one job's agent from its events and,
through ``TextTap``, its provider's text; counting writes nothing: the job's holder stores the
progress with the heartbeat it sends anyway, so the row lags the agent by up to one beat.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from orkestrel.core import (
    AbortSignal,
    Agent,
    ContentDelta,
    ContextFormat,
    Message,
    Provider,
    ProviderResult,
    ProviderStreamItem,
    ProviderStreamOptions,
    TokenUsage,
    ToolCall,
    ToolDefinition,
    ToolResult,
)

__all__ = ["TEXT_CHARS", "Progress", "ProgressMeter", "ProgressPayload", "TextTap"]

# How much of the answer being written the progress keeps: enough to read what it is at.
TEXT_CHARS = 200


class ProgressPayload(TypedDict):
    """``Progress`` as JSON (the row's column, a card's ``display.progress``)."""

    turns: int
    tools: int
    last_tool: str
    tokens: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Progress:
    """How far a job's agent is (see the module); all zero before it started."""

    turns: int = 0
    tools: int = 0
    last_tool: str = ""
    tokens: int = 0
    text: str = ""

    def payload(self) -> ProgressPayload:
        """As stored and sent (the one serializer)."""
        return {
            "turns": self.turns,
            "tools": self.tools,
            "last_tool": self.last_tool,
            "tokens": self.tokens,
            "text": self.text,
        }

    @classmethod
    def of(cls, value: object) -> Progress:
        """The progress a stored payload holds; what is missing or malformed counts as none."""
        if not isinstance(value, dict):
            return cls()

        def count(name: str) -> int:
            number = value.get(name)
            return number if isinstance(number, int) and not isinstance(number, bool) else 0

        def text(name: str) -> str:
            found = value.get(name)
            return found if isinstance(found, str) else ""

        return cls(
            turns=count("turns"),
            tools=count("tools"),
            last_tool=text("last_tool"),
            tokens=count("tokens"),
            text=text("text")[-TEXT_CHARS:],
        )


class ProgressMeter:
    """Counts one job's agent run; ``version`` moves whenever the progress changed.

    ``watch`` each agent the job builds (an attempt's agent counts from zero); feed it the
    provider's answer text with ``text`` (a ``TextTap``).
    """

    __slots__ = ("_fresh", "_last_tool", "_text", "_tokens", "_tools", "_turns", "version")

    def __init__(self) -> None:
        self.version = 0
        self._clear()

    def _clear(self) -> None:
        self._turns = self._tools = self._tokens = 0
        self._last_tool = self._text = ""
        self._fresh = False

    @property
    def progress(self) -> Progress:
        return Progress(
            turns=self._turns,
            tools=self._tools,
            last_tool=self._last_tool,
            tokens=self._tokens,
            text=self._text,
        )

    def watch(self, agent: Agent) -> None:
        """Count ``agent``'s run, from zero."""
        self._clear()
        self.version += 1
        agent.emitter.on("turn", self._turn)
        agent.emitter.on("tool", self._tool)
        agent.emitter.on("usage", self._usage)

    def text(self, piece: str) -> None:
        """A piece of the answer text; a new request's first piece starts the text over."""
        if self._fresh:
            self._text = ""
            self._fresh = False
        # Bounded: a long answer costs a 200-character copy a piece, nothing more.
        self._text = (self._text + piece)[-TEXT_CHARS:]
        self.version += 1

    def _turn(self, _turn: int) -> None:
        self._turns += 1
        # What the last request said stays until this one says something.
        self._fresh = True
        self.version += 1

    def _tool(self, call: ToolCall, _result: ToolResult) -> None:
        self._tools += 1
        self._last_tool = call.name
        self.version += 1

    def _usage(self, usage: TokenUsage) -> None:
        self._tokens += usage.total
        self.version += 1


class TextTap:
    """``provider``, telling ``listener`` every piece of answer text it streams."""

    __slots__ = ("_listener", "_provider")

    def __init__(self, provider: Provider, listener: Callable[[str], None]) -> None:
        self._provider = provider
        self._listener = listener

    @property
    def id(self) -> str:
        return self._provider.id

    @property
    def name(self) -> str:
        return self._provider.name

    @property
    def format(self) -> ContextFormat | None:
        return self._provider.format

    async def generate(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult:
        result = await self._provider.generate(messages, signal, tools, options)
        if result.content:
            self._listener(result.content)
        return result

    async def stream(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncIterator[ProviderStreamItem]:
        inner = self._provider.stream(messages, signal, tools, options)
        listener = self._listener
        try:
            async for item in inner:
                if isinstance(item, ContentDelta) and item.type == "content" and item.text:
                    listener(item.text)
                yield item
        finally:
            # Closed early (the run stopped reading): the provider's stream closes too.
            close: Any = getattr(inner, "aclose", None)
            if close is not None:
                await close()
