"""The common body of the HTTP providers: constructor checks, the stream loop, ``generate``.

A concrete provider supplies the request (``_body``), the framing (``framing``: SSE or NDJSON)
and a ``Turn`` subclass that maps each wire event to deltas. ``Turn`` holds what every protocol
assembles the same way: content through a ``ThinkSplitter``, native reasoning, tool calls
keyed by position, usage and the stop reason.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, Required, TypedDict

import httpx

from orkestrel.core.abort import AbortSignal
from orkestrel.core.errors import ProviderAbortError, ProviderError
from orkestrel.core.messages import Message, MessageInput, ToolCall, mint_id
from orkestrel.core.provider import (
    ContentDelta,
    ContextFormat,
    ProviderResult,
    ProviderStreamItem,
    ProviderStreamOptions,
    ThinkingDelta,
    ToolDefinition,
)
from orkestrel.core.think import create_think_splitter
from orkestrel.core.usage import TokenUsage

from .http import ExchangeAborted, ProviderHttp, RetryListener
from .wire import (
    MAX_LINE_BYTES,
    LineTooLong,
    NDJSONDecoder,
    SSEDecoder,
    parse_arguments,
    to_messages,
    to_options,
    to_tools,
)

__all__ = [
    "CallDelta",
    "CallListener",
    "ErrorFactory",
    "HttpProvider",
    "ModelListener",
    "PendingCall",
    "Turn",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class CallDelta:
    """A tool call as the model streams it: its position in the turn, its id and name once the
    wire gave them, and the new piece of its arguments' JSON text."""

    index: int
    id: str | None
    name: str | None
    arguments: str


CallListener = Callable[[CallDelta], None]
# Told of the model the server reported answering a turn (once per turn, when it names one).
ModelListener = Callable[[str], None]
"""Told of each new piece of a streamed tool call (a run shows the call as it is written)."""


class ErrorFactory(Protocol):
    """Builds this provider's ``ProviderError`` (``ProviderHttp.error``: named, redacted)."""

    def __call__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        retryable: bool = False,
    ) -> ProviderError: ...


class PendingCall:
    """A tool call being assembled: streamed argument ``parts`` or a whole ``value``.

    ``told`` counts the parts a ``CallListener`` heard of (``-1``: it heard the whole value).
    """

    __slots__ = ("id", "name", "parts", "told", "value")

    def __init__(self, id: str | None, name: str | None) -> None:
        self.id = id
        self.name = name
        self.parts: list[str] = []
        self.value: Any = None
        self.told: int | None = None


def _reported_model(payload: bytes) -> str | None:
    """The model a stream event names: top level (Chat Completions, Ollama) or in
    ``message`` (Anthropic's ``message_start``); ``None`` when it names none."""
    if b'"model"' not in payload:
        return None  # cheap: most events of a long answer are read no further
    try:
        event = json.loads(payload)
    except ValueError:
        return None  # the wire parser reports a malformed event
    if not isinstance(event, dict):
        return None
    model = event.get("model")
    if not isinstance(model, str) and isinstance(event.get("message"), dict):
        model = event["message"].get("model")
    return model if isinstance(model, str) and model else None


def _tell_calls(calls: Mapping[int, PendingCall], listener: CallListener) -> None:
    """Tell ``listener`` what each call gained since it was last told (and of new calls)."""
    for index, call in calls.items():
        told = call.told
        if told == -1:
            continue
        if call.value is not None:
            call.told = -1
            piece = json.dumps(call.value, ensure_ascii=False, default=str)
        else:
            count = len(call.parts)
            if told is not None and count == told:
                continue
            piece = "".join(call.parts[told or 0 :])
            call.told = count
        try:
            listener(CallDelta(index, call.id, call.name, piece))
        except Exception:
            # A broken listener must not break the stream.
            logger.exception("a tool call listener failed")


class Turn:
    """One turn being assembled from wire events; ``feed`` appends the deltas it produced."""

    __slots__ = ("_error", "_split", "calls", "done", "reasoning", "splitter", "stop", "usage")

    def __init__(self, error: ErrorFactory) -> None:
        self._error = error
        self.splitter = create_think_splitter()
        self._split = self.splitter.split
        self.reasoning: list[str] = []
        self.calls: dict[int, PendingCall] = {}
        self.usage: TokenUsage | None = None
        self.stop: str | None = None
        self.done = False

    def feed(self, payload: bytes, out: list[ProviderStreamItem]) -> None:
        """Map one event payload to deltas appended on ``out``; raise ``ProviderError``."""
        raise NotImplementedError

    @property
    def complete(self) -> bool:
        """Whether the wire said the turn ended (a body cut before this is a broken stream)."""
        return self.done

    def text(self, raw: str, out: list[ProviderStreamItem]) -> None:
        """Route raw answer text through the think splitter."""
        clean = self._split(raw)
        thought = self.splitter.last_thinking
        if thought:
            out.append(ThinkingDelta(thought))
        if clean:
            out.append(ContentDelta(clean))

    def think(self, raw: str, out: list[ProviderStreamItem]) -> None:
        """Native reasoning, as the wire delivered it."""
        self.reasoning.append(raw)
        out.append(ThinkingDelta(raw))

    def malformed(self, payload: bytes, why: str = "unparsable event") -> ProviderError:
        return self._error(
            f"malformed stream: {why}", body=payload[:1000].decode("utf-8", "replace")
        )

    def fail(self, message: str, body: str | None = None, retryable: bool = False) -> ProviderError:
        """The model server reported an error in the stream: ``message`` quotes it, so it goes
        to the log and the error's ``body`` only; users read that the server failed."""
        return self._error(
            "the model server reported an error mid-stream",
            body=message if body is None else body,
            retryable=retryable,
        )

    def finish(self, out: list[ProviderStreamItem]) -> None:
        """Settle the end of the body: the splitter's held tail, then the completeness check."""
        tail = self.splitter.flush()
        if self.splitter.last_thinking:
            out.append(ThinkingDelta(self.splitter.last_thinking))
        if tail:
            out.append(ContentDelta(tail))
        if not self.complete:
            raise self._error("stream ended before the turn completed")

    def content(self) -> str:
        return self.splitter.content

    def thinking(self) -> str | None:
        joined = "".join(self.reasoning) + self.splitter.thinking
        return joined or None

    def tools(self, strict: bool) -> tuple[ToolCall, ...] | None:
        """The assembled calls in wire order; ``strict`` raises on arguments that do not parse."""
        calls: list[ToolCall] = []
        for key in sorted(self.calls):
            call = self.calls[key]
            raw = call.value if call.value is not None else "".join(call.parts)
            arguments = parse_arguments(raw)
            if not call.name:
                if strict:
                    raise self._error("tool call has no name", body=str(raw)[:1000])
                continue
            if arguments is None:
                if not strict:
                    continue
                # The model's mistake, not the wire's: answer the call with an error it can
                # read and correct on its next turn, instead of failing the whole run.
                excerpt = str(raw)[:200]
                calls.append(
                    ToolCall(
                        call.id or mint_id(),
                        call.name,
                        {},
                        f"arguments are not a JSON object: {excerpt!r}",
                    )
                )
                continue
            calls.append(ToolCall(call.id or mint_id(), call.name, arguments))
        return tuple(calls) or None

    def result(self, strict: bool = True) -> ProviderResult:
        """The assembled turn (``strict=False`` for a partial: unfinished calls are dropped)."""
        return ProviderResult(
            self.content(), self.thinking(), self.tools(strict), self.usage, self.stop
        )


def _number(field: str, value: object, *, allow_none: bool = False, minimum: float = 0.0) -> None:
    if value is None and allow_none:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value < minimum
    ):
        raise ValueError(f"{field} must be a finite number >= {minimum}, not {value!r}")


def _timeout(field: str, value: object) -> None:
    """An optional bound on a wait: ``None`` (off) or a positive, finite number of seconds."""
    if value is not None and (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ValueError(f"{field} must be a positive number or None, not {value!r}")


class HttpProviderOptions(TypedDict, total=False):
    """The constructor options every HTTP provider shares (see ``HttpProvider``)."""

    model: Required[str]
    base_url: str | None
    api_key: str | None
    connect_timeout: float
    read_timeout: float | None
    retries: int
    backoff: float
    max_backoff: float
    headers: Mapping[str, str] | None
    extra_body: Mapping[str, Any] | None
    client: httpx.AsyncClient | None
    id: str | None
    name: str | None
    format: ContextFormat | None
    max_line_bytes: int
    first_token_timeout: float | None
    stream_idle_timeout: float | None
    on_retry: RetryListener | None
    native_documents: bool


class HttpProvider:
    """Base of the HTTP providers; see ``OpenAIProvider`` for the constructor arguments."""

    default_name: ClassVar[str] = "http"
    default_base_url: ClassVar[str] = ""
    path: ClassVar[str] = ""
    framing: ClassVar[Literal["sse", "ndjson"]] = "sse"

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float | None = 600.0,
        retries: int = 2,
        backoff: float = 0.5,
        max_backoff: float = 30.0,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        client: httpx.AsyncClient | None = None,
        id: str | None = None,
        name: str | None = None,
        format: ContextFormat | None = None,
        max_line_bytes: int = MAX_LINE_BYTES,
        first_token_timeout: float | None = None,
        stream_idle_timeout: float | None = None,
        on_retry: RetryListener | None = None,
        native_documents: bool = False,
    ) -> None:
        if not isinstance(model, str) or not model:
            raise TypeError("model must be a non-empty string")
        base_url = self.default_base_url if base_url is None else base_url
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http:// or https:// URL")
        if api_key is not None and not isinstance(api_key, str):
            raise TypeError("api_key must be a string or None")
        _number("connect_timeout", connect_timeout, minimum=0.001)
        _number("read_timeout", read_timeout, allow_none=True, minimum=0.001)
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ValueError(f"retries must be a non-negative int, not {retries!r}")
        _number("backoff", backoff)
        _number("max_backoff", max_backoff)
        if headers is not None and (
            not isinstance(headers, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            raise TypeError("headers must be a mapping of strings to strings")
        if extra_body is not None and not isinstance(extra_body, Mapping):
            raise TypeError("extra_body must be a mapping")
        if client is not None and not isinstance(client, httpx.AsyncClient):
            raise TypeError("client must be an httpx.AsyncClient")
        for field, value in (("id", id), ("name", name)):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"{field} must be a non-empty string or None")
        if format is not None and not isinstance(format, ContextFormat):
            raise TypeError("format must be a ContextFormat or None")
        if isinstance(max_line_bytes, bool) or not isinstance(max_line_bytes, int):
            raise TypeError(f"max_line_bytes must be an int, not {max_line_bytes!r}")
        if max_line_bytes < 1:
            raise ValueError(f"max_line_bytes must be >= 1, not {max_line_bytes!r}")
        _timeout("first_token_timeout", first_token_timeout)
        _timeout("stream_idle_timeout", stream_idle_timeout)
        self._max_line = max_line_bytes
        # Whether the model reads a PDF itself (else it reads the text extracted from it).
        self.native_documents = bool(native_documents)
        # Told of each streamed tool call's pieces (``CallListener``); ``None``: nobody asks.
        self.on_call: CallListener | None = None
        # Told of the model the server reported answering (``ModelListener``).
        self.on_model: ModelListener | None = None
        self._model = model
        self._base_url = base_url.rstrip("/")
        self._name = name or self.default_name
        self._id = id or f"{self._name}:{model}"
        self._format = format
        self._extra = dict(extra_body) if extra_body else None
        wire_headers = {
            "content-type": "application/json",
            "accept": "application/x-ndjson" if self.framing == "ndjson" else "text/event-stream",
        }
        wire_headers.update(self._auth_headers(api_key))
        wire_headers.update(headers or {})
        self._http = ProviderHttp(
            provider=self._name,
            url=self._base_url + self.path,
            headers=wire_headers,
            secret=api_key,
            connect_timeout=float(connect_timeout),
            read_timeout=None if read_timeout is None else float(read_timeout),
            retries=retries,
            backoff=float(backoff),
            max_backoff=float(max_backoff),
            client=client,
            first_timeout=None if first_token_timeout is None else float(first_token_timeout),
            idle_timeout=None if stream_idle_timeout is None else float(stream_idle_timeout),
            on_retry=on_retry,
        )

    @property
    def on_retry(self) -> RetryListener | None:
        """Told before each retry's wait (``(seconds, error)``): a run says it is waiting."""
        return self._http.on_retry

    @on_retry.setter
    def on_retry(self, listener: RetryListener | None) -> None:
        self._http.on_retry = listener

    @property
    def id(self) -> str:
        """This instance's trace label."""
        return self._id

    @property
    def name(self) -> str:
        """The backend identifier (``ProviderError.provider``)."""
        return self._name

    @property
    def format(self) -> ContextFormat | None:
        """The provider's preferred context framing, if any."""
        return self._format

    @property
    def model(self) -> str:
        return self._model

    @property
    def base_url(self) -> str:
        return self._base_url

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self._model!r}, base_url={self._base_url!r})"

    async def aclose(self) -> None:
        """Close the provider's own HTTP client (a client passed in is left open)."""
        await self._http.aclose()

    async def __aenter__(self) -> HttpProvider:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.aclose()

    def _auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"} if api_key else {}

    def _body(
        self,
        messages: list[Message],
        tools: list[ToolDefinition],
        options: ProviderStreamOptions,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _turn(self, options: ProviderStreamOptions) -> Turn:
        raise NotImplementedError

    def _settled(self, turn: Turn, result: ProviderResult) -> None:
        """Hook run once a turn completed (Anthropic remembers thinking signatures here)."""

    async def generate(
        self,
        messages: Sequence[MessageInput],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult:
        """Run one turn and return the assembled result (drains ``stream``).

        Raises:
            ProviderAbortError: the signal fired (before or during the call).
            ProviderError: HTTP failure, broken connection or malformed stream.
        """
        result: ProviderResult | None = None
        async with aclosing(self.stream(messages, signal, tools, options)) as items:
            async for item in items:
                if isinstance(item, ProviderResult):
                    result = item
        assert result is not None
        return result

    async def stream(
        self,
        messages: Sequence[MessageInput],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncGenerator[ProviderStreamItem, None]:
        """Stream one turn: ``ContentDelta`` / ``ThinkingDelta`` items, then the result.

        Raises:
            ProviderAbortError: the signal fired; ``partial`` holds what streamed so far.
            ProviderError: HTTP failure, broken connection, malformed stream, a line
                longer than ``max_line_bytes``, or a stall (no answer within
                ``first_token_timeout``, or a gap longer than ``stream_idle_timeout``).
        """
        if not isinstance(signal, AbortSignal):
            raise TypeError("signal must be an AbortSignal")
        wire_options = to_options(options)
        turn = self._turn(wire_options)
        if signal.aborted:
            raise ProviderAbortError(turn.result(strict=False), signal.reason)
        body = self._body(to_messages(messages), to_tools(tools), wire_options)
        if self._extra:
            body.update(self._extra)
        limit = self._max_line
        decoder = NDJSONDecoder(limit) if self.framing == "ndjson" else SSEDecoder(limit)
        exchange = self._http.open(body, signal)
        out: list[ProviderStreamItem] = []
        feed = turn.feed
        listener = self.on_call
        reported = self.on_model
        calls = turn.calls
        try:
            while True:
                chunk = await exchange.next()
                payloads = decoder.flush() if chunk is None else decoder.feed(chunk)
                for payload in payloads:
                    if turn.done:
                        break  # Anything after the end marker is not part of the turn.
                    feed(payload, out)
                    if reported is not None:
                        model = _reported_model(payload)
                        if model is not None:
                            reported(model)
                            reported = None  # once per turn
                    if listener is not None and calls:
                        _tell_calls(calls, listener)
                    if out:
                        for item in out:
                            yield item
                            if signal.aborted:
                                raise ExchangeAborted
                        out.clear()
                if chunk is None:
                    break
            turn.finish(out)
            for item in out:
                yield item
                if signal.aborted:
                    raise ExchangeAborted
            result = turn.result()
        except ExchangeAborted:
            raise ProviderAbortError(turn.result(strict=False), signal.reason) from None
        except LineTooLong as error:
            # A server that never ends its line: stop reading instead of buffering forever.
            raise self._http.error(str(error)) from None
        finally:
            await exchange.aclose()
        self._settled(turn, result)
        yield result
