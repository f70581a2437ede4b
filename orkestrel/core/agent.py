"""The agent: a bounded context → provider → tools → repeat loop with push and pull surfaces."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator, Iterable, Mapping, Sequence
from typing import Any, Final, Literal, TypedDict, Unpack, get_args

from .abort import Abort, AbortSignal
from .authority import Authority
from .budget import Budget
from .channel import Channel
from .chunks import AgentChunk, AgentResult, AgentStatus
from .constants import DEFAULT_AGENT_LIMIT
from .context import AgentContext
from .conversation import Conversation
from .conversation_manager import ConversationManager
from .emitter import Emitter, ErrorHandler, Listener
from .errors import AgentError
from .instructions import InstructionManager
from .messages import Message, mint_id
from .observer import RunObserver
from .provider import (
    Provider,
    ProviderStreamOptions,
    ResponseFormat,
    ThinkingLevel,
    ToolChoice,
)
from .run import Run
from .scheduler import Scheduler
from .scopes import Scope
from .timeout import Timeout
from .tools import ToolManager
from .usage import TokenUsage
from .workspace_manager import WorkspaceManager

__all__ = ["AGENT_EVENTS", "Agent", "AgentStream", "RunOptions", "create_agent"]

AgentEvent = Literal[
    "start",
    "turn",
    "tool",
    "usage",
    "deny",
    "finish",
    "error",
    "abort",
    "exhaust",
    "compact_error",
]
AGENT_EVENTS: Final[tuple[AgentEvent, ...]] = get_args(AgentEvent)
AgentListeners = Mapping[AgentEvent, Listener | Iterable[Listener]]


class RunOptions(TypedDict, total=False):
    """The per-run keyword options of ``Agent.stream`` / ``Agent.generate``."""

    think: bool | ThinkingLevel | None
    schema: Mapping[str, Any] | None
    tool_choice: ToolChoice | None
    parallel_tool_calls: bool | None
    response_format: ResponseFormat | None
    limit: int | None
    timeout: float | None
    budget: Budget[TokenUsage] | None
    signal: AbortSignal | None
    read_only: bool | None


class AgentOptions(TypedDict, total=False):
    """The keyword options of ``Agent`` / ``create_agent`` (see ``Agent``)."""

    system: str | None
    tools: ToolManager | None
    instructions: InstructionManager | None
    workspaces: WorkspaceManager | None
    scope: Scope | None
    conversations: ConversationManager | None
    conversation: Conversation | None
    context: AgentContext | None
    limit: int | None
    timeout: float | None
    budget: Budget[TokenUsage] | None
    scheduler: Scheduler | None
    signal: AbortSignal | None
    authority: Authority | None
    window: Budget[Sequence[Message]] | None
    strict: bool
    read_only: bool
    on: AgentListeners | None
    error: ErrorHandler | None


class AgentStream:
    """A live run: iterate ``events`` for chunks, await ``result``, ``abort()`` to cancel."""

    __slots__ = ("_abort", "_channel", "_task", "result")

    def __init__(self, channel: Channel[AgentChunk], task: asyncio.Task[AgentResult], abort: Abort):
        self._channel = channel
        self._task = task
        self._abort = abort
        self.result: asyncio.Future[AgentResult] = task

    @property
    def events(self) -> AsyncIterator[AgentChunk]:
        return aiter(self._channel)

    @property
    def channel(self) -> Channel[AgentChunk]:
        """The chunks' channel, for a consumer that drains them in batches (``take``)."""
        return self._channel

    def abort(self, reason: object = None) -> None:
        """Cancel the run; ``result`` resolves partial with what streamed so far."""
        self._abort.abort(reason)

    def __await__(self) -> Generator[Any, None, AgentResult]:
        return self._task.__await__()


def _number(name: str, value: object, *, integer: bool = False) -> None:
    kinds = int if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or value < 0:
        kind = "non-negative integer" if integer else "non-negative number"
        raise ValueError(f"{name} must be a {kind}, not {value!r}")


def _flag(name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, not {type(value).__name__}")


class Agent:
    """The bounded agent loop over one provider; ``generate`` and ``stream`` share one run.

    ``read_only`` (assignable at any time; a run's own ``read_only`` option wins for that run)
    keeps the whole tool catalogue advertised but runs only safe calls: any other call is
    answered with the refusal "write access is off for this conversation", a denial.
    ``observer`` (assignable; ``None`` by default) hears each run's steps (``RunObserver``).
    """

    def __init__(
        self,
        provider: Provider,
        *,
        system: str | None = None,
        tools: ToolManager | None = None,
        instructions: InstructionManager | None = None,
        workspaces: WorkspaceManager | None = None,
        scope: Scope | None = None,
        conversations: ConversationManager | None = None,
        conversation: Conversation | None = None,
        context: AgentContext | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        budget: Budget[TokenUsage] | None = None,
        scheduler: Scheduler | None = None,
        signal: AbortSignal | None = None,
        authority: Authority | None = None,
        window: Budget[Sequence[Message]] | None = None,
        strict: bool = False,
        read_only: bool = False,
        on: AgentListeners | None = None,
        error: ErrorHandler | None = None,
    ) -> None:
        if not callable(getattr(provider, "stream", None)):
            raise TypeError("provider must implement the Provider contract (stream/generate)")
        _flag("read_only", read_only)
        if limit is not None:
            _number("limit", limit, integer=True)
        if timeout is not None:
            _number("timeout", timeout)
        if signal is not None and not isinstance(signal, AbortSignal):
            raise TypeError("signal must be an AbortSignal")
        self.id = mint_id()
        self.provider = provider
        self.context = context or AgentContext(
            system=system,
            tools=tools,
            instructions=instructions,
            workspaces=workspaces,
            scope=scope,
            conversations=conversations,
            conversation=conversation,
        )
        self.limit = DEFAULT_AGENT_LIMIT if limit is None else limit
        self.timeout = timeout
        self.budget = budget
        self.scheduler = scheduler
        self.signal = signal
        self.authority = authority
        self.window = window
        self.strict = strict
        self.read_only = read_only
        self.emitter: Emitter[AgentEvent] = Emitter(on=on, error=error)
        self.observer: RunObserver | None = None
        self._status: AgentStatus = "idle"
        self._runs: set[Abort] = set()

    @property
    def status(self) -> AgentStatus:
        return self._status

    def stream(
        self,
        *,
        think: bool | ThinkingLevel | None = None,
        schema: Mapping[str, Any] | None = None,
        tool_choice: ToolChoice | None = None,
        parallel_tool_calls: bool | None = None,
        response_format: ResponseFormat | None = None,
        limit: int | None = None,
        timeout: float | None = None,
        budget: Budget[TokenUsage] | None = None,
        signal: AbortSignal | None = None,
        read_only: bool | None = None,
    ) -> AgentStream:
        """Start a run and return its live handle. Raises ``AgentError`` synchronously.

        ``read_only`` (``None``: the agent's own ``read_only``) runs only safe tool calls.
        ``tool_choice``, ``parallel_tool_calls`` and ``response_format`` go with every model
        call of the run (``ProviderStreamOptions``).
        """
        if read_only is not None:
            _flag("read_only", read_only)
        if limit is not None:
            _number("limit", limit, integer=True)
        if timeout is not None:
            _number("timeout", timeout)
        if signal is not None and not isinstance(signal, AbortSignal):
            raise TypeError("signal must be an AbortSignal")
        if self._runs and (self.window is not None or (self.budget is not None and budget is None)):
            raise AgentError(
                "CONCURRENCY",
                "a run is already in flight on this agent and would share its "
                "budget/window accounting; pass a per-run budget or use another agent",
            )
        run_budget = budget if budget is not None else self.budget
        if run_budget is not None:
            run_budget.start()
        seconds = timeout if timeout is not None else self.timeout
        deadline = Timeout(seconds).start() if seconds is not None else None
        bound = Abort.linked(
            self.signal,
            signal,
            deadline.signal if deadline is not None else None,
            run_budget.signal if run_budget is not None else None,
        )
        asked = ProviderStreamOptions(
            think=think,
            schema=schema,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            response_format=response_format,
        )
        options = asked if asked != ProviderStreamOptions() else None
        channel: Channel[AgentChunk] = Channel()
        run = Run(
            self,
            channel,
            limit=self.limit if limit is None else limit,
            bound=bound,
            timeout=deadline,
            budget=run_budget,
            window=self.window,
            options=options,
            read_only=self.read_only if read_only is None else read_only,
        )
        self._runs.add(bound)
        self._status = "running"
        self.emitter.emit("start")
        task = asyncio.Task(
            self._pump(run, channel, bound), loop=asyncio.get_running_loop(), eager_start=True
        )
        return AgentStream(channel, task, bound)

    async def _pump(self, run: Run, channel: Channel[AgentChunk], bound: Abort) -> AgentResult:
        try:
            result = await run.execute()
        except BaseException as error:
            self._runs.discard(bound)
            self._status = "error"
            channel.fail(error) if isinstance(error, Exception) else channel.close()
            if isinstance(error, Exception):
                self.emitter.emit("error", error)
            raise
        self._runs.discard(bound)
        self._status = "done"
        channel.close()
        self.emitter.emit("finish", result)
        return result

    async def generate(self, **options: Unpack[RunOptions]) -> AgentResult:
        """Run to completion (draining the same stream ``stream`` exposes)."""
        stream = self.stream(**options)
        try:
            async for _ in stream.events:
                pass
        except BaseException:
            # The events raised the run's error; collect it from the task too, or asyncio
            # logs "Task exception was never retrieved" for every failed run.
            await asyncio.gather(stream.result, return_exceptions=True)
            raise
        return await stream.result

    def abort(self, reason: object = None) -> None:
        """Cancel every in-flight run of this agent."""
        for bound in list(self._runs):
            bound.abort(reason)


def create_agent(provider: Provider, **options: Unpack[AgentOptions]) -> Agent:
    """Create an ``Agent`` over ``provider``; see ``Agent`` for the keyword options."""
    return Agent(provider, **options)
