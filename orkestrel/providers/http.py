"""The HTTP side of the real providers: one streamed POST, retried, abortable, redacted.

``ProviderHttp`` owns the ``httpx.AsyncClient``, the timeouts and the retry policy of one
provider. ``ProviderHttp.open`` starts an ``Exchange``: a reader task sends the request,
retries 429 / 5xx answers and failed connects with backoff (honouring ``Retry-After``), then
pushes the body's raw chunks into a buffer the provider drains with ``await exchange.next()``.

Two clocks bound a model that hangs, tighter than the read timeout: ``first_timeout`` until
the body's first chunk (a failed start, retried like a failed connect), then ``idle_timeout``
between chunks (a stall mid-answer: the text so far stands, so it is not retried).

Why a reader task: an abort must close the connection at once, even while the consumer is
busy elsewhere. The signal's listener cancels the task (the transport then drops the socket)
and wakes the consumer, which raises; nothing is left pending once ``aclose()`` returns.

Every error becomes a ``ProviderError`` whose message names the failure in our own words (the
provider, the status and its meaning, or the kind: timeout, connection refused...), which users
read in a run's ``error``. What the model server said (its body, an exception's text) can name
accounts or key suffixes: it goes to the log and the error's ``body`` (a short, redacted
excerpt), never the message; the API key reaches neither.
"""

from __future__ import annotations

import asyncio
import email.utils
import errno
import json
import logging
import socket
import time
from collections import deque
from collections.abc import Callable, Mapping
from http import HTTPStatus
from typing import Any, Final

import httpx

from orkestrel.core.abort import AbortSignal
from orkestrel.core.errors import ProviderError

from .transport import streaming_transport
from .wire import scrub_text

__all__ = [
    "EXCERPT_LIMIT",
    "Exchange",
    "ExchangeAborted",
    "ProviderHttp",
    "RetryListener",
    "retry_after",
]

logger = logging.getLogger(__name__)

# How much of an error body is kept on a ProviderError (characters) and read (bytes).
EXCERPT_LIMIT: Final = 500
_READ_LIMIT: Final = 8192
_REDACTED: Final = "[redacted]"
# End-of-body marker in the chunk buffer.
_EOF: Final = None


class ExchangeAborted(Exception):
    """Raised by ``Exchange.next`` once the signal fired; the provider turns it into its error."""


def retry_after(headers: httpx.Headers, now: float | None = None) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``), if any."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


RetryListener = Callable[[float, ProviderError], None]
"""Told before a retry's wait: how long, and the error that caused it (a 429's status...)."""


class ProviderHttp:
    """Connection settings and retry policy shared by every call of one provider."""

    __slots__ = (
        "_client",
        "_loop",
        "_owned",
        "_secret",
        "_timeout",
        "backoff",
        "first_timeout",
        "headers",
        "idle_timeout",
        "max_backoff",
        "on_retry",
        "provider",
        "retries",
        "url",
    )

    def __init__(
        self,
        *,
        provider: str,
        url: str,
        headers: Mapping[str, str],
        secret: str | None,
        connect_timeout: float,
        read_timeout: float | None,
        retries: int,
        backoff: float,
        max_backoff: float,
        client: httpx.AsyncClient | None = None,
        first_timeout: float | None = None,
        idle_timeout: float | None = None,
        on_retry: RetryListener | None = None,
    ) -> None:
        self.provider = provider
        # The answer's first byte must come this soon after the request (a hung model is
        # found in seconds, not after the read timeout); ``None``: only the read timeout.
        self.first_timeout = first_timeout
        # Once the answer began, no gap between chunks may last longer: a model that stalls
        # mid-answer frees its user in seconds, not after the read timeout (which must also
        # allow for a long first token); ``None``: only the read timeout. Any bytes count,
        # keep-alive pings too: a server that pings is alive, only slow.
        self.idle_timeout = idle_timeout
        # Told before each retry's wait: (seconds, the error that caused it).
        self.on_retry = on_retry
        self.url = url
        self.headers = dict(headers)
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self._secret = secret or None
        self._timeout = httpx.Timeout(read_timeout, connect=connect_timeout)
        self._client = client
        self._owned = client is None
        self._loop: asyncio.AbstractEventLoop | None = None

    def client(self) -> httpx.AsyncClient:
        """The client for the running loop (an owned client is rebuilt for a new loop)."""
        if not self._owned:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        # An httpx pool is bound to the loop that opened its sockets.
        if self._client is None or self._loop is not loop or self._client.is_closed:
            transport = streaming_transport(secure=not self.url.startswith("http://"))
            self._client = httpx.AsyncClient(timeout=self._timeout, transport=transport)
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the owned client (a client passed in stays the caller's to close)."""
        if self._owned and self._client is not None:
            client, self._client = self._client, None
            await client.aclose()

    def redact(self, text: str) -> str:
        """``text`` with the API key blanked out (servers sometimes echo it)."""
        if self._secret and self._secret in text:
            return text.replace(self._secret, _REDACTED)
        return text

    def error(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        retryable: bool = False,
        detail: str | None = None,
    ) -> ProviderError:
        """A ``ProviderError`` for this provider, redacted (and free of lone surrogates).

        ``message`` is ours, for users; the server's words (``body``, or ``detail``: an
        exception's text) are logged and kept on ``body``, never put in the message.
        """
        excerpt = None if body is None else self.redact(_squeeze(scrub_text(body)))
        said = excerpt if detail is None else self.redact(_squeeze(scrub_text(detail)))
        if said:
            logger.warning("%s: %s; the model server said: %s", self.provider, message, said)
        return ProviderError(
            f"{self.provider}: {self.redact(scrub_text(message))}",
            provider=self.provider,
            status=status,
            body=excerpt,
            retryable=retryable,
        )

    def delay(self, attempt: int, after: float | None) -> float:
        """The pause before retry number ``attempt`` (0-based), bounded by ``max_backoff``."""
        wanted = self.backoff * (2**attempt) if after is None else after
        return min(wanted, self.max_backoff)

    def open(self, body: Mapping[str, Any], signal: AbortSignal) -> Exchange:
        """Start one streamed POST of ``body``; the caller must ``await exchange.aclose()``."""
        exchange = Exchange(self, json.dumps(body, ensure_ascii=False).encode(), signal)
        exchange.start()
        return exchange


def _squeeze(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= EXCERPT_LIMIT else text[: EXCERPT_LIMIT - 1] + "…"


def _answered(status: int) -> str:
    """A status the model server answered, in words: ``HTTP 502 (bad gateway)``."""
    try:
        meaning = HTTPStatus(status).phrase.lower()
    except ValueError:
        meaning = "an unknown status"
    return f"the model server answered HTTP {status} ({meaning})"


def _unreachable(exc: BaseException) -> str:
    """Why a connect failed, in words: the exception's own text (hosts, addresses) is logged."""
    chain: list[BaseException] = []
    seen: BaseException | None = exc
    while seen is not None and len(chain) < 10:
        chain.append(seen)
        seen = seen.__cause__ or seen.__context__
    # The OS's reason first: the aiohttp transport reports a refused connect as a timeout.
    if any(isinstance(link, socket.gaierror) for link in chain):
        return "host not found"
    if any(isinstance(link, OSError) and link.errno == errno.ECONNREFUSED for link in chain):
        return "connection refused"
    if any(isinstance(link, httpx.ConnectTimeout | TimeoutError) for link in chain):
        return "connect timeout"
    return type(exc).__name__


async def _read_excerpt(response: httpx.Response) -> str:
    buffer = bytearray()
    try:
        async for chunk in response.aiter_bytes():
            buffer += chunk
            if len(buffer) >= _READ_LIMIT:
                break
    except httpx.HTTPError:
        pass  # An excerpt is best effort; the status already says what went wrong.
    return bytes(buffer[:_READ_LIMIT]).decode("utf-8", "replace")


class Exchange:
    """One streamed request: a reader task fills a chunk buffer the provider drains."""

    __slots__ = (
        "_body",
        "_buffer",
        "_heard",
        "_http",
        "_loop",
        "_signal",
        "_stall",
        "_task",
        "_waiter",
        "aborted",
        "status",
    )

    def __init__(self, http: ProviderHttp, body: bytes, signal: AbortSignal) -> None:
        self._http = http
        self._body = body
        self._signal = signal
        self._buffer: deque[bytes | BaseException | None] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # The stall watch (``idle_timeout``): when the last chunk came (loop time), and the
        # timer that looks again once that is ``idle_timeout`` old.
        self._heard = 0.0
        self._stall: asyncio.TimerHandle | None = None
        self.aborted = False
        self.status: int | None = None

    def start(self) -> None:
        self._loop = loop = asyncio.get_running_loop()
        self._task = loop.create_task(self._run())
        self._signal.add_listener(self._on_abort)

    async def next(self) -> bytes | None:
        """The next raw body chunk, or ``None`` at the end of the body.

        Raises:
            ExchangeAborted: the signal fired.
            ProviderError: the request failed (after any retries) or the connection broke.
        """
        buffer = self._buffer
        while True:
            if self.aborted:
                raise ExchangeAborted
            if buffer:
                item = buffer.popleft()
                if item is None or type(item) is bytes:
                    return item
                assert isinstance(item, BaseException)
                raise item
            waiter = asyncio.get_running_loop().create_future()
            self._waiter = waiter
            try:
                await waiter
            finally:
                self._waiter = None

    async def aclose(self) -> None:
        """Stop reading and release the connection; idempotent, leaves no task behind."""
        self._signal.remove_listener(self._on_abort)
        task, self._task = self._task, None
        if task is None:
            return
        # Cancel once only: a second cancel would cut the transport's own socket cleanup short.
        if not task.done() and not task.cancelling():
            task.cancel()
        try:
            await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            # Swallow the reader's own cancellation, never one aimed at the caller.
            if current is not None and current.cancelling():
                raise

    def _on_abort(self, _reason: object) -> None:
        self.aborted = True
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _push(self, item: bytes | BaseException | None) -> None:
        self._buffer.append(item)
        self._wake()

    def _heard_chunk(self, chunk: bytes) -> None:
        """Push a body chunk and restart the stall watch (armed by the first chunk).

        One timer per ``idle_timeout`` that looks at the time of the last chunk, rather than
        a timeout rescheduled on every chunk: a chunk then costs a clock read, not a timer.
        """
        self._push(chunk)
        idle = self._http.idle_timeout
        if idle is None:
            return
        loop = self._loop
        assert loop is not None
        self._heard = loop.time()
        if self._stall is None:
            self._stall = loop.call_at(self._heard + idle, self._check_stall)

    def _check_stall(self) -> None:
        """The stall watch rang: look again if a chunk came since, else end the stream.

        It ends as an abort does (the reader cancelled, the socket dropped at once), with an
        error behind the chunks already buffered: the consumer keeps the text so far, and the
        reader, cancelled, retries nothing (a retry would stream the answer a second time).
        """
        idle = self._http.idle_timeout
        loop = self._loop
        assert idle is not None and loop is not None
        due = self._heard + idle
        if loop.time() < due:
            self._stall = loop.call_at(due, self._check_stall)
            return
        self._stall = None
        message = f"stream stalled: the model stopped sending for {idle:g} s"
        self._push(self._http.error(message, status=self.status))
        if self._task is not None and not self._task.done():
            self._task.cancel()

    def _stop_watch(self) -> None:
        stall, self._stall = self._stall, None
        if stall is not None:
            stall.cancel()

    async def _run(self) -> None:
        try:
            await self._attempts()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - handed to the consumer, never lost
            self._push(exc)

    async def _attempts(self) -> None:
        http = self._http
        attempt = 0
        while True:
            failure = await self._attempt()
            if failure is None:
                return
            error, after = failure
            if not error.retryable or attempt >= http.retries:
                self._push(error)
                return
            pause = http.delay(attempt, after)
            if http.on_retry is not None:
                http.on_retry(pause, error)
            await asyncio.sleep(pause)
            attempt += 1

    async def _attempt(self) -> tuple[ProviderError, float | None] | None:
        """One try: stream the body into the buffer (``None``), or the error and its wait."""
        http = self._http
        client = http.client()
        request = client.build_request("POST", http.url, content=self._body, headers=http.headers)
        first = http.first_timeout
        deadline = asyncio.get_running_loop().time() + first if first is not None else None
        try:
            async with asyncio.timeout_at(deadline):
                response = await client.send(request, stream=True)
        except TimeoutError:
            return http.error(f"no answer within {first:g} s", retryable=True), None
        except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
            message = f"cannot connect to the model server ({_unreachable(exc)})"
            return http.error(message, detail=str(exc), retryable=True), None
        except httpx.TimeoutException as exc:
            return http.error(f"request timed out ({type(exc).__name__})"), None
        except httpx.HTTPError as exc:
            message = f"request failed ({type(exc).__name__})"
            return http.error(message, detail=str(exc)), None
        try:
            status = self.status = response.status_code
            if status >= 300:  # redirects are not followed: a 3xx is a misconfigured URL
                text = await _read_excerpt(response)
                retryable = status == 429 or status >= 500
                error = http.error(
                    _answered(status),
                    status=status,
                    body=text,
                    retryable=retryable,
                )
                return error, retry_after(response.headers) if retryable else None
            try:
                chunks = response.aiter_bytes()
                if deadline is not None:
                    try:
                        async with asyncio.timeout_at(deadline):
                            self._heard_chunk(await anext(chunks))
                    except StopAsyncIteration:
                        pass
                    except TimeoutError:
                        return http.error(f"no answer within {first:g} s", retryable=True), None
                heard = self._push if http.idle_timeout is None else self._heard_chunk
                async for chunk in chunks:
                    heard(chunk)
            except httpx.TimeoutException as exc:
                self._push(http.error(f"stream timed out ({type(exc).__name__})", status=status))
                return None
            except httpx.HTTPError as exc:
                message = f"connection broken mid-stream ({type(exc).__name__})"
                self._push(http.error(message, status=status, detail=str(exc)))
                return None
            self._push(_EOF)
            return None
        finally:
            self._stop_watch()
            await response.aclose()
