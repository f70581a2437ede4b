"""One agent run: the bounded context → provider → tools → repeat loop, in steps.

Private to the kit; ``Agent`` creates a ``Run`` per ``stream()`` and drives ``execute``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from .abort import Abort
from .budget import Budget
from .channel import Channel
from .chunks import (
    AgentChunk,
    AgentResult,
    StopReason,
    ThinkChunk,
    TokenChunk,
    ToolChunk,
    UsageChunk,
)
from .dispatch import ObservedCalls, history_ids, own_ids, plan, run_batches, tool_content
from .errors import ProviderAbortError
from .messages import Message, ToolCall, ToolResult, mint_id
from .provider import (
    ContentDelta,
    ProviderResult,
    ProviderStreamItem,
    ProviderStreamOptions,
    ThinkingDelta,
    ToolDefinition,
)
from .scopes import filter_allow_list
from .timeout import Timeout
from .usage import TokenUsage, sanitize_usage

if TYPE_CHECKING:
    from .agent import Agent
    from .authority import AuthorityDecision
    from .conversation import Conversation
    from .observer import RunObserver

__all__: list[str] = []

CANCELLED_TOOL = "cancelled: the run was aborted before this tool finished"


class Cancelled(Exception):
    """Internal: the run's bound signal fired; unwinds to the settle step."""


class Run:
    """The state of one run; ``execute`` settles it into an ``AgentResult``."""

    def __init__(
        self,
        agent: Agent,
        channel: Channel[AgentChunk],
        *,
        limit: int,
        bound: Abort,
        timeout: Timeout | None,
        budget: Budget[TokenUsage] | None,
        window: Budget[Sequence[Message]] | None,
        options: ProviderStreamOptions | None,
        read_only: bool = False,
    ) -> None:
        self.agent = agent
        self.channel = channel
        self.limit = limit
        self.bound = bound
        self.signal = bound.signal
        self.timeout = timeout
        self.budget = budget
        self.window = window
        self.options = options
        self.read_only = read_only
        # Every tool-call id of the conversation, read at the run's first call (``_own``).
        self.seen: set[str] | None = None
        # The current answer as parts: joining on demand keeps a long answer linear.
        self.parts: list[str] = []
        self.thinking: list[str] = []
        self.usage: TokenUsage | None = None
        self.futile = False
        self.committed = False
        # The last tool batch's ``system`` texts, until the next request (``_add_system``).
        self.system: list[str] = []
        self.conversation: Conversation = agent.context.messages
        # Who hears the run's steps (``RunObserver``); ``None``, the common case, costs a check.
        self.observer: RunObserver | None = agent.observer

    @property
    def content(self) -> str:
        """The current turn's answer so far."""
        parts = self.parts
        if len(parts) > 1:
            joined = "".join(parts)
            parts[:] = [joined]
            return joined
        return parts[0] if parts else ""

    @content.setter
    def content(self, value: str) -> None:
        self.parts = [value] if value else []

    # -- settle ------------------------------------------------------------------------------

    async def execute(self) -> AgentResult:
        observer = self.observer
        if observer is None:
            return await self._settle()
        observer.run_started()
        try:
            result = await self._settle()
        except BaseException as error:
            observer.run_ended(None, error)
            raise
        observer.run_ended(result, None)
        return result

    async def _settle(self) -> AgentResult:
        agent = self.agent
        emitter = agent.emitter
        try:
            stop = await self._loop()
        except Cancelled:
            stop = "abort"
        except BaseException as error:
            if self.signal.aborted and not isinstance(
                error, asyncio.CancelledError | KeyboardInterrupt
            ):
                stop = "abort"
            else:
                self._cleanup()
                raise
        self._cleanup()
        partial = stop != "done"
        if stop == "abort" and self.content and not self.committed:
            # Keep what the user already saw: the cut-off answer joins the history.
            self.conversation.add(Message(mint_id(), "assistant", self.content))
        result = AgentResult(
            content=self.content,
            thinking="\n\n".join(self.thinking) if self.thinking else None,
            usage=self.usage,
            partial=partial,
            stop=stop,
            reason=self.signal.reason if stop == "abort" else None,
        )
        if stop == "abort":
            emitter.emit("abort", self.signal.reason)
        elif stop == "exhaust":
            emitter.emit("exhaust", self.limit)
        return result

    def _cleanup(self) -> None:
        if self.timeout is not None:
            self.timeout.clear()
        self.signal.dispose()

    # -- the loop ----------------------------------------------------------------------------

    async def _loop(self) -> StopReason:
        agent = self.agent
        signal = self.signal
        if signal.aborted:
            return "abort"
        context = agent.context
        provider = agent.provider
        emitter = agent.emitter
        messages = context.build(provider.format)
        window = self.window
        trimming = window is not None and self.conversation.summarizable
        if window is not None and trimming:
            window.clear()
            messages = await self._trim(messages)
        scheduler = agent.scheduler
        turn = 0
        while turn < self.limit:
            if turn and scheduler is not None:
                before = self.conversation.count
                await scheduler.yield_(signal=signal)
                if self.conversation.count > before:
                    # What the scheduler appended (a person's messages sent meanwhile) joins
                    # this request, after the last turn's tool results.
                    messages.extend(self.conversation.messages()[before:])
                if signal.aborted:
                    self._add_system(messages)
                    return "abort"
            # The tools' ``system`` texts follow the batch AND the queued input (seed 004).
            self._add_system(messages)
            emitter.emit("turn", turn)
            self.content = ""
            self.committed = False
            if self.observer is None:
                result = await self._provide(messages, self._definitions())
            else:
                result = await self._observed_provide(messages, self._definitions(), turn)
            if result.usage is not None:
                self._report(result.usage)
            if signal.aborted:
                return "abort"
            if not result.tools:
                self.content = result.content
                self.committed = True
                self.conversation.add(Message(mint_id(), "assistant", result.content))
                return "done"
            calls = self._own(result.tools)
            assistant = self.conversation.add(
                Message(mint_id(), "assistant", result.content, calls)
            )
            self.committed = True
            messages.append(assistant)
            await self._dispatch(calls, messages)
            turn += 1
            if turn < self.limit:
                # That turn's text is committed with its calls; the next answer starts empty.
                self.content = ""
            if signal.aborted:
                self._add_system(messages)
                return "abort"
            if turn < self.limit and trimming:
                messages = await self._trim(messages)
        self._add_system(messages)
        return "exhaust" if self.limit > 0 else "done"

    # -- provide: one provider call, streamed, metered ---------------------------------------

    def _definitions(self) -> list[ToolDefinition] | None:
        tools = self.agent.context.tools
        if not tools.count:
            return None
        definitions: Sequence[ToolDefinition] = tools.definitions()
        scope = self.agent.context.scope
        if scope is not None and scope.tools is not None:
            definitions = filter_allow_list(definitions, scope.tools, _name)
        return list(definitions) if definitions else None

    async def _observed_provide(
        self, messages: list[Message], definitions: list[ToolDefinition] | None, turn: int
    ) -> ProviderResult:
        observer = self.observer
        assert observer is not None
        observer.request_started(turn)
        try:
            result = await self._provide(messages, definitions)
        except BaseException as error:
            observer.request_ended(None, error)
            raise
        observer.request_ended(result, None)
        return result

    async def _provide(
        self, messages: list[Message], definitions: list[ToolDefinition] | None
    ) -> ProviderResult:
        push = self.channel.push
        budget = self.budget
        charged = 0
        length = 0
        parts = self.parts = []
        result: ProviderResult | None = None
        stream = self.agent.provider.stream(messages, self.signal, definitions, self.options)
        if self.observer is not None:
            stream = _watched(stream, self.observer)
        finished = False
        try:
            async for item in stream:
                # Exact types first (the hot path); subclasses are routed further down.
                if type(item) is ContentDelta:
                    text = item.text
                    if not text:
                        continue
                    parts.append(text)
                    length += len(text)
                    push(TokenChunk(text))
                    if budget is not None:
                        estimate = -(-length // 4)  # estimate_tokens without the join
                        if estimate > charged:
                            increment = estimate - charged
                            charged = estimate
                            budget.consume(TokenUsage(0, increment, increment))
                elif type(item) is ThinkingDelta:
                    if item.text:
                        push(ThinkChunk(item.text))
                elif isinstance(item, ProviderResult):
                    result = item
                elif isinstance(item, ContentDelta | ThinkingDelta):
                    # Subclasses of the delta types (rare): route by their declared channel.
                    if item.type == "content":
                        parts.append(item.text)
                        length += len(item.text)
                        push(TokenChunk(item.text))
                    elif item.text:
                        push(ThinkChunk(item.text))
            finished = True
        except ProviderAbortError as error:
            partial = error.partial
            if partial is not None and partial.thinking:
                self.thinking.append(partial.thinking)
            if partial is not None and partial.usage is not None:
                usage = sanitize_usage(partial.usage)
                self._charge_residual(usage, charged)
                self._report(usage)
            raise Cancelled from error
        finally:
            if not finished:
                await _close(stream)
        if result is None:
            # A provider that never yielded its result: assemble one from what streamed.
            result = ProviderResult(content=self.content)
        if result.thinking:
            self.thinking.append(result.thinking)
        if result.usage is not None:
            usage = sanitize_usage(result.usage)
            self._charge_residual(usage, charged)
            result = ProviderResult(
                result.content, result.thinking, result.tools, usage, result.stop_reason
            )
        return result

    def _charge_residual(self, usage: TokenUsage, charged: int) -> None:
        if self.budget is not None:
            self.budget.consume(
                TokenUsage(
                    usage.prompt,
                    max(0, usage.completion - charged),
                    max(0, usage.total - charged),
                )
            )

    def _report(self, usage: TokenUsage) -> None:
        """Fold a turn's usage into the run total and report it (chunk + event)."""
        self.usage = usage if self.usage is None else self.usage + usage
        self.channel.push(UsageChunk(usage))
        self.agent.emitter.emit("usage", usage)

    # -- dispatch: ids, gates, ordered batches, tool messages (see ``dispatch``) -----------

    def _own(self, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """The turn's calls with ids of the agent's (stored with the assistant turn)."""
        seen = self.seen
        if seen is None:
            seen = self.seen = history_ids(self.conversation)
        return own_ids(calls, seen)

    async def _dispatch(self, calls: Sequence[ToolCall], messages: list[Message]) -> None:
        context = self.agent.context
        emitter = self.agent.emitter
        scope = context.scope
        observer = self.observer
        decided: dict[str, AuthorityDecision] | None = None if observer is None else {}
        results, batches = plan(
            calls,
            context.tools,
            allowed=scope.tools if scope is not None else None,
            authority=self.agent.authority,
            read_only=self.read_only,
            emitter=emitter,
            decided=decided,
        )
        if observer is not None and results:
            # The calls the gates answered: started and ended at once, in the model's order.
            for call in calls:
                answered = results.get(call.id)
                if answered is not None:
                    observer.tool_started(call, decided.get(call.id) if decided else None)
                    observer.tool_ended(call, answered)
        if batches:
            for item in await self._execute(batches, decided):
                results[item.id] = item
        push = self.channel.push
        add = self.conversation.add
        for call in calls:
            result = results.get(call.id) or ToolResult(
                call.id, call.name, error=CANCELLED_TOOL, cancelled=True
            )
            content = tool_content(result)
            message = add(
                Message(mint_id(), "tool", content, tool_call_id=call.id, outcome=result.outcome)
            )
            messages.append(message)
            if result.system:
                # Held until the next request: they follow the whole batch of tool messages
                # and the user input queued meanwhile, which the scheduler adds first.
                self.system.extend(result.system)
            push(ToolChunk(call, result))
            emitter.emit("tool", call, result)

    def _add_system(self, messages: list[Message]) -> None:
        """Append the held ``system`` texts of the last tool batch (none: nothing)."""
        held, self.system = self.system, []
        for text in held:
            messages.append(self.conversation.add(Message(mint_id(), "system", text)))

    async def _execute(
        self,
        batches: list[list[ToolCall]],
        decided: dict[str, AuthorityDecision] | None = None,
    ) -> list[ToolResult]:
        """Run the batches in order, bounded by the run's signal; the calls that finished."""
        tools = self.agent.context.tools
        signal = self.signal
        done: list[ToolResult] = []
        if signal.aborted:
            return done
        observer = self.observer
        # One batch (the common turn) goes straight to the manager; several run in order.
        work = (
            ObservedCalls(tools, observer, decided or {}).run(batches, done, signal)
            if observer is not None
            else tools.execute(batches[0])
            if len(batches) == 1
            else run_batches(tools, batches, done, signal)
        )
        task = asyncio.Task(work, loop=asyncio.get_running_loop(), eager_start=True)
        if task.done():
            return task.result()
        waiter = asyncio.ensure_future(signal.wait())
        try:
            await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not waiter.done():
                waiter.cancel()
            if not task.done():
                task.cancel()
            await asyncio.gather(task, waiter, return_exceptions=True)
        if task.cancelled():
            return done
        error = task.exception()
        if error is not None:
            if signal.aborted:
                return done
            raise error
        return task.result()

    # -- trim: automatic compaction against the window budget --------------------------------

    async def _trim(self, messages: list[Message]) -> list[Message]:
        if self.futile:
            return messages
        window = self.window
        assert window is not None
        window.clear()
        window.consume(messages)
        if not window.exhausted:
            return messages
        try:
            section = await self.conversation.compact()
        except Exception as error:
            self.agent.emitter.emit("compact_error", error)
            if self.agent.strict:
                raise
            return messages
        if section is None:
            self.futile = True
            return messages
        return self.agent.context.build(self.agent.provider.format)


def _name(definition: ToolDefinition) -> str:
    return definition.name


async def _watched(
    stream: AsyncIterator[ProviderStreamItem], observer: RunObserver
) -> AsyncIterator[ProviderStreamItem]:
    """``stream``, telling ``observer`` of its first item (an observed run's requests only)."""
    first = True
    try:
        async for item in stream:
            if first:
                first = False
                observer.first_chunk()
            yield item
    finally:
        await _close(stream)


async def _close(stream: object) -> None:
    # ``Provider.stream`` promises an async iterator; an async generator can also be closed.
    aclose: Callable[[], Awaitable[object]] | None = getattr(stream, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:  # noqa: BLE001 - closing a finished generator must not mask the outcome
            pass
