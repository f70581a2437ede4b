"""What the three HTTP providers share, checked on each: failures, retries, abort, secrecy."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from orkestrel.core.abort import create_abort
from orkestrel.core.errors import ProviderAbortError, ProviderError
from orkestrel.core.messages import ToolCall
from orkestrel.core.provider import ContentDelta, Provider, ProviderResult
from orkestrel.core.usage import TokenUsage
from orkestrel.providers.anthropic import AnthropicProvider
from orkestrel.providers.base import HttpProvider
from orkestrel.providers.http import retry_after
from orkestrel.providers.ollama import OllamaProvider
from orkestrel.providers.openai import OpenAIProvider

from .conftest import collect
from .server import Reply, StubServer
from .turns import TURNS, reply

SECRET = "sk-live-7f3a9c1e5b"


@dataclass(frozen=True)
class Protocol:
    name: str
    make: Callable[..., HttpProvider]
    suffix: str = ""

    def frames(self, parts: list[str], end: bool) -> list[bytes]:
        return TURNS[self.name](parts, end=end)


PROTOCOLS = [
    Protocol("openai", OpenAIProvider, "/v1"),
    Protocol("anthropic", AnthropicProvider),
    Protocol("ollama", OllamaProvider),
]


@pytest.fixture(params=PROTOCOLS, ids=[p.name for p in PROTOCOLS])
def protocol(request: pytest.FixtureRequest) -> Protocol:
    return request.param


def build(protocol: Protocol, stub: StubServer, **options: Any) -> HttpProvider:
    options.setdefault("retries", 0)
    return protocol.make(model="m", base_url=stub.url + protocol.suffix, **options)


async def test_a_plain_stream_yields_its_deltas_then_the_result(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["Hel", "lo"], True)))
    deltas, result = await collect(build(protocol, stub))
    assert deltas == [ContentDelta("Hel"), ContentDelta("lo")]
    assert result.content == "Hello"


async def test_a_scripted_tool_turn_then_answer_round_trips_through_one_provider(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(
        reply(protocol.name, calls=[("c1", "add", {"a": 1, "b": 2})]),
        reply(protocol.name, ["3"]),
    )
    chosen = build(protocol, stub)
    history: list[dict[str, Any]] = [{"role": "user", "content": "1+2?"}]
    _, first = await collect(chosen, history)
    assert first.tools == (ToolCall("c1", "add", {"a": 1, "b": 2}),)
    assert first.usage == TokenUsage(10, 5, 15)
    history += [
        {"role": "assistant", "content": "", "calls": [first.tools[0].to_dict()]},
        {"role": "tool", "content": "3", "tool_call_id": "c1"},
    ]
    _, second = await collect(chosen, history)
    assert (second.content, second.tools) == ("3", None)
    assert len(stub.requests) == 2
    assert "3" in stub.requests[1].body.decode()
    assert stub.pending == 0


async def test_an_http_500_raises_with_its_status_in_words_and_the_body_kept_apart(
    protocol: Protocol, stub: StubServer
) -> None:
    body = b'{"error": {"message": "upstream exploded", "type": "server_error"}}'
    stub.enqueue(Reply([body], status=500, content_type="application/json"))
    with pytest.raises(ProviderError) as caught:
        await collect(build(protocol, stub))
    error = caught.value
    assert (error.provider, error.status, error.retryable) == (protocol.name, 500, True)
    assert str(error) == (
        f"{protocol.name}: the model server answered HTTP 500 (internal server error)"
    )
    # What the server said is the operators' (the log, ``body``), never the message's.
    assert "exploded" not in str(error)
    assert error.body == body.decode()


async def test_a_500_before_any_content_is_retried_then_succeeds(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply([b"busy"], status=503), Reply(protocol.frames(["ok"], True)))
    _, result = await collect(build(protocol, stub, retries=1, backoff=0.01))
    assert result.content == "ok"
    assert len(stub.requests) == 2


async def test_retries_are_bounded_and_the_last_error_raises(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(*(Reply([b"down"], status=502) for _ in range(3)))
    with pytest.raises(ProviderError, match="HTTP 502"):
        await collect(build(protocol, stub, retries=2, backoff=0.001))
    assert len(stub.requests) == 3


async def test_a_client_error_is_not_retried(protocol: Protocol, stub: StubServer) -> None:
    stub.enqueue(Reply([b"bad"], status=400), Reply(protocol.frames(["never"], True)))
    with pytest.raises(ProviderError) as caught:
        await collect(build(protocol, stub, retries=3, backoff=0.001))
    assert (caught.value.status, caught.value.retryable) == (400, False)
    assert len(stub.requests) == 1


async def test_a_429_waits_for_retry_after_before_retrying(
    protocol: Protocol, stub: StubServer
) -> None:
    # The backoff alone would wait 30 s: finishing quickly proves Retry-After was used.
    stub.enqueue(
        Reply([b"slow down"], status=429, headers={"retry-after": "0.2"}),
        Reply(protocol.frames(["ok"], True)),
    )
    started = time.monotonic()
    _, result = await collect(build(protocol, stub, retries=1, backoff=30.0, max_backoff=60.0))
    elapsed = time.monotonic() - started
    assert result.content == "ok"
    assert 0.2 <= elapsed < 5.0


async def test_the_retry_listener_hears_each_wait_and_its_cause(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(
        Reply([b"slow down"], status=429, headers={"retry-after": "0.2"}),
        Reply([b"down"], status=503),
        Reply(protocol.frames(["ok"], True)),
    )
    heard: list[tuple[float, int | None]] = []
    provider = build(protocol, stub, retries=2, backoff=0.01)
    provider.on_retry = lambda seconds, error: heard.append((seconds, error.status))
    _, result = await collect(provider)
    assert result.content == "ok"
    assert heard == [(0.2, 429), (0.02, 503)]


async def test_a_model_that_does_not_begin_within_the_first_token_timeout_fails_fast(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["late"], True), pause=3.0))
    started = time.monotonic()
    with pytest.raises(ProviderError) as raised:
        await collect(build(protocol, stub, first_token_timeout=0.3, read_timeout=30.0))
    assert "no answer within 0.3 s" in str(raised.value)
    assert time.monotonic() - started < 2.5


async def test_the_first_token_timeout_spares_an_answer_that_began_in_time(
    protocol: Protocol, stub: StubServer
) -> None:
    # Later deltas may be slower than the first-token bound: only the start is timed.
    frames = protocol.frames(["a", "b"], True)
    stub.enqueue(Reply(frames, pause=0.15))
    _, result = await collect(build(protocol, stub, first_token_timeout=0.5))
    assert result.content == "ab"


async def test_a_model_that_stalls_mid_answer_ends_at_the_stream_idle_timeout_keeping_its_text(
    protocol: Protocol, stub: StubServer
) -> None:
    # Two deltas, then the connection stays open with nothing more: only the idle bound can
    # end this before the 30 s read timeout. A second answer is scripted for a retry that
    # must not happen (the text would stream twice).
    stub.enqueue(
        Reply(protocol.frames(["par", "tial"], False), hold=True),
        Reply(protocol.frames(["again"], True)),
    )
    chosen = build(protocol, stub, stream_idle_timeout=0.3, read_timeout=30.0, retries=2)
    seen: list[Any] = []
    started = time.monotonic()
    async with asyncio.timeout(10):
        with pytest.raises(ProviderError) as caught:
            async for item in chosen.stream([], create_abort().signal):
                seen.append(item)
    elapsed = time.monotonic() - started
    assert seen == [ContentDelta("par"), ContentDelta("tial")]
    assert "stream stalled: the model stopped sending for 0.3 s" in str(caught.value)
    assert (caught.value.status, caught.value.retryable) == (200, False)
    assert 0.3 <= elapsed < 2.5
    assert (len(stub.requests), stub.pending) == (1, 1)
    # The stalled connection was dropped, not left to the read timeout.
    assert await asyncio.to_thread(stub.closed.wait, 2.0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_the_stream_idle_timeout_spares_a_steady_stream_longer_than_it(
    protocol: Protocol, stub: StubServer
) -> None:
    # Time is the contract: each gap (0.15 s) is under the bound, the whole answer is over it.
    parts = ["a", "b", "c", "d", "e", "f"]
    stub.enqueue(Reply(protocol.frames(parts, True), pause=0.15))
    started = time.monotonic()
    _, result = await collect(build(protocol, stub, stream_idle_timeout=0.5))
    assert result.content == "abcdef"
    assert time.monotonic() - started > 0.5


async def test_the_stream_idle_timeout_starts_at_the_first_chunk_not_the_request(
    protocol: Protocol, stub: StubServer
) -> None:
    # Headers at once, then the whole answer only after twice the idle bound: a slow start is
    # the first-token timeout's to judge, not the idle one's.
    gate = threading.Event()
    stub.enqueue(Reply([b"".join(protocol.frames(["late", " but whole"], True))], gate=gate))
    asyncio.get_running_loop().call_later(0.6, gate.set)
    _, result = await collect(build(protocol, stub, stream_idle_timeout=0.3))
    assert result.content == "late but whole"
    assert gate.is_set()


async def test_a_long_retry_after_is_capped_by_max_backoff(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(
        Reply([b"later"], status=429, headers={"retry-after": "3600"}),
        Reply(protocol.frames(["ok"], True)),
    )
    started = time.monotonic()
    _, result = await collect(build(protocol, stub, retries=1, max_backoff=0.05))
    assert result.content == "ok"
    assert time.monotonic() - started < 5.0


async def test_a_connection_dropped_mid_stream_raises_after_the_deltas_so_far(
    protocol: Protocol, stub: StubServer
) -> None:
    frames = protocol.frames(["one", "two", "three"], True)
    stub.enqueue(Reply(frames, drop_after=len(frames) - 2))
    seen: list[Any] = []
    with pytest.raises(ProviderError, match="connection broken mid-stream") as caught:
        async for item in build(protocol, stub).stream([], create_abort().signal):
            seen.append(item)
    assert ContentDelta("one") in seen
    assert not any(isinstance(item, ProviderResult) for item in seen)
    assert caught.value.status == 200


async def test_an_unparsable_line_raises_a_malformed_stream_error(
    protocol: Protocol, stub: StubServer
) -> None:
    garbage = b"{oops\n" if protocol.name == "ollama" else b"data: {oops\n\n"
    stub.enqueue(Reply([protocol.frames(["a"], False)[0], garbage]))
    with pytest.raises(ProviderError, match="malformed stream") as caught:
        await collect(build(protocol, stub))
    assert caught.value.body == "{oops"


async def test_a_refused_connection_raises_a_provider_error(protocol: Protocol) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chosen = protocol.make(model="m", base_url=f"http://127.0.0.1:{port}", retries=0)
    with pytest.raises(
        ProviderError, match=r"cannot connect to the model server \(connection refused\)"
    ) as caught:
        await collect(chosen)
    assert caught.value.status is None


async def test_a_silent_server_trips_the_read_timeout(protocol: Protocol, stub: StubServer) -> None:
    stub.enqueue(Reply([], hold=True))
    with pytest.raises(ProviderError, match="timed out"):
        await collect(build(protocol, stub, read_timeout=0.2))


async def test_the_api_key_never_appears_in_errors_or_repr(
    protocol: Protocol, stub: StubServer
) -> None:
    echo = f'{{"error": {{"message": "Incorrect API key provided: {SECRET}"}}}}'.encode()
    stub.enqueue(Reply([echo], status=401, content_type="application/json"))
    chosen = build(protocol, stub, api_key=SECRET)
    with pytest.raises(ProviderError) as caught:
        await collect(chosen)
    error = caught.value
    assert "HTTP 401 (unauthorized)" in str(error) and "Incorrect" not in str(error)
    assert "Incorrect API key provided: [redacted]" in (error.body or "")
    for text in (str(error), repr(error), error.body or "", repr(chosen), str(chosen)):
        assert SECRET not in text
    assert SECRET in str(stub.requests[0].headers)  # it was sent, only never shown


async def test_a_pre_aborted_signal_raises_before_any_request(
    protocol: Protocol, stub: StubServer
) -> None:
    abort = create_abort()
    abort.abort("stop")
    with pytest.raises(ProviderAbortError) as caught:
        await collect(build(protocol, stub), signal=abort.signal)
    assert caught.value.partial == ProviderResult("")
    assert caught.value.reason == "stop"
    with pytest.raises(ProviderAbortError):
        await build(protocol, stub).generate([], abort.signal)
    assert stub.requests == []


async def test_abort_mid_stream_closes_the_connection_at_once_and_keeps_the_partial(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["par", "tial"], False), hold=True))
    abort = create_abort()
    stream = build(protocol, stub).stream([], abort.signal)
    seen = [await anext(stream), await anext(stream)]
    assert seen == [ContentDelta("par"), ContentDelta("tial")]

    fired_at = 0.0

    def fire() -> None:
        nonlocal fired_at
        fired_at = time.monotonic()
        abort.abort("user")

    # Fired from the loop while the stream is parked waiting for the next chunk.
    asyncio.get_running_loop().call_later(0.05, fire)
    with pytest.raises(ProviderAbortError) as caught:
        await anext(stream)
    assert caught.value.partial.content == "partial"
    assert caught.value.reason == "user"
    assert await asyncio.to_thread(stub.closed.wait, 2.0)
    assert stub.closed_at is not None
    assert stub.closed_at - fired_at < 0.1
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_abort_between_deltas_raises_on_the_next_pull(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["a", "b", "c"], False), hold=True))
    abort = create_abort()
    stream = build(protocol, stub).stream([], abort.signal)
    assert await anext(stream) == ContentDelta("a")
    abort.abort()
    fired_at = time.monotonic()
    with pytest.raises(ProviderAbortError) as caught:
        await anext(stream)
    assert caught.value.partial.content == "a"
    assert await asyncio.to_thread(stub.closed.wait, 2.0)
    assert stub.closed_at is not None and stub.closed_at - fired_at < 0.1
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_abort_during_a_retry_wait_raises_at_once(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply([b"later"], status=429, headers={"retry-after": "30"}))
    abort = create_abort()
    chosen = build(protocol, stub, retries=1, max_backoff=30.0)
    running = asyncio.create_task(collect(chosen, signal=abort.signal))
    while not stub.requests:  # wait until the 429 was asked for
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)  # ...and received: the client now sleeps 30 s
    started = time.monotonic()
    abort.abort()
    with pytest.raises(ProviderAbortError) as caught:
        await running
    assert time.monotonic() - started < 0.5
    assert caught.value.partial == ProviderResult("")
    assert len(stub.requests) == 1
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_generate_raises_the_abort_too(protocol: Protocol, stub: StubServer) -> None:
    stub.enqueue(Reply(protocol.frames(["x"], False), hold=True))
    abort = create_abort()
    running = asyncio.create_task(build(protocol, stub).generate([], abort.signal))
    assert await asyncio.to_thread(stub.holding.wait, 2.0)
    await asyncio.sleep(0.2)  # let the client read what was sent
    abort.abort()
    with pytest.raises(ProviderAbortError) as caught:
        await running
    assert caught.value.partial.content == "x"
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_closing_the_stream_early_releases_the_connection(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["a", "b"], False), hold=True))
    stream = build(protocol, stub).stream([], create_abort().signal)
    await anext(stream)
    await stream.aclose()
    assert await asyncio.to_thread(stub.closed.wait, 2.0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_the_consumer_propagates_and_closes_the_connection(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["a"], False), hold=True))
    running = asyncio.create_task(collect(build(protocol, stub)))
    assert await asyncio.to_thread(stub.holding.wait, 2.0)
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    assert await asyncio.to_thread(stub.closed.wait, 2.0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_supplied_client_is_used_and_left_open(
    protocol: Protocol, stub: StubServer
) -> None:
    stub.enqueue(Reply(protocol.frames(["ok"], True)))
    async with httpx.AsyncClient() as client:
        chosen = build(protocol, stub, client=client)
        _, result = await collect(chosen)
        await chosen.aclose()
        assert not client.is_closed
    assert result.content == "ok"


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", ""),
        ("base_url", "ftp://x"),
        ("api_key", 3),
        ("connect_timeout", 0),
        ("read_timeout", -1.0),
        ("retries", -1),
        ("backoff", float("nan")),
        ("headers", {"x": 1}),
        ("extra_body", ["x"]),
        ("first_token_timeout", 0),
        ("first_token_timeout", float("nan")),
        ("stream_idle_timeout", 0),
        ("stream_idle_timeout", -1.0),
        ("stream_idle_timeout", float("inf")),
        ("stream_idle_timeout", True),
        ("stream_idle_timeout", "30"),
    ],
)
def test_bad_constructor_arguments_name_the_field(
    protocol: Protocol, field: str, value: Any
) -> None:
    options: dict[str, Any] = {"model": "m", "base_url": "http://h", field: value}
    with pytest.raises((TypeError, ValueError), match=field):
        protocol.make(**options)


def test_id_name_and_repr_describe_the_instance(protocol: Protocol) -> None:
    chosen = protocol.make(model="m", base_url="http://h:1/", api_key=SECRET)
    assert isinstance(chosen, Provider)
    assert (chosen.id, chosen.name, chosen.format) == (f"{protocol.name}:m", protocol.name, None)
    assert repr(chosen) == f"{type(chosen).__name__}(model='m', base_url='http://h:1')"
    named = protocol.make(model="m", base_url="http://h", id="trace-1", name="local")
    assert (named.id, named.name) == ("trace-1", "local")


def test_retry_after_reads_seconds_milliseconds_and_http_dates() -> None:
    assert retry_after(httpx.Headers({"retry-after": "2.5"})) == 2.5
    assert retry_after(httpx.Headers({"retry-after-ms": "150", "retry-after": "9"})) == 0.15
    date = httpx.Headers({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"})
    assert retry_after(date, now=1445412480.0) == 10.0
    assert retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after(httpx.Headers({})) is None


# -- hostile wire: lone surrogates and lines that never end -------------------------------------

MARK = b"SURROGATE"
# Half a surrogate pair as a JSON escape (json.loads accepts it) and as raw bytes.
LONE = [b"\\ud83d", b"\\uDE00", b"\xed\xa0\xbd"]


def plant(frames: list[bytes], replacement: bytes) -> list[bytes]:
    """``frames`` with each ``MARK`` swapped for raw wire bytes (a JSON encoder would refuse)."""
    return [frame.replace(MARK, replacement) for frame in frames]


def rechunk(frames: list[bytes], size: int) -> list[bytes]:
    body = b"".join(frames)
    return [body[at : at + size] for at in range(0, len(body), size)]


@pytest.mark.parametrize("lone", LONE, ids=["escape", "escape-upper", "raw-bytes"])
async def test_a_lone_surrogate_in_streamed_text_arrives_as_the_replacement_character(
    protocol: Protocol, stub: StubServer, lone: bytes
) -> None:
    stub.enqueue(Reply(plant(protocol.frames(["a", "b" + MARK.decode() + "c"], True), lone)))
    deltas, result = await collect(build(protocol, stub))
    assert deltas == [ContentDelta("a"), ContentDelta("b\ufffdc")]
    assert result.content == "ab\ufffdc"
    json.dumps([result.content, *(d.text for d in deltas)], ensure_ascii=False).encode()


@pytest.mark.parametrize("lone", LONE, ids=["escape", "escape-upper", "raw-bytes"])
async def test_a_lone_surrogate_in_a_tool_call_name_or_arguments_becomes_the_replacement(
    protocol: Protocol, stub: StubServer, lone: bytes
) -> None:
    calls = [("c1", "look" + MARK.decode(), {"q": "x" + MARK.decode()})]
    stub.enqueue(Reply(plant(list(reply(protocol.name, calls=calls).chunks), lone)))
    _, result = await collect(build(protocol, stub))
    assert result.tools == (ToolCall("c1", "look\ufffd", {"q": "x\ufffd"}),)
    json.dumps([call.to_dict() for call in result.tools], ensure_ascii=False).encode()


async def test_a_lone_surrogate_in_an_error_body_is_replaced_in_the_error(
    protocol: Protocol, stub: StubServer
) -> None:
    body = b'{"error": {"message": "bad \\ud83d input", "type": "invalid_request_error"}}'
    stub.enqueue(Reply([body], status=400, content_type="application/json"))
    with pytest.raises(ProviderError) as caught:
        await collect(build(protocol, stub))
    assert "HTTP 400 (bad request)" in str(caught.value)
    str(caught.value).encode()
    assert caught.value.body is not None
    caught.value.body.encode()


async def test_an_endless_line_ends_the_stream_with_a_provider_error_quickly(
    protocol: Protocol, stub: StubServer
) -> None:
    # 4 MiB without a newline, then the connection stays open: it never ends on its own.
    stub.enqueue(Reply([b"data: " + b"a" * 65536, *[b"a" * 65536] * 64], hold=True))
    started = time.monotonic()
    async with asyncio.timeout(10):
        with pytest.raises(ProviderError, match="line longer than 1048576 bytes") as caught:
            await collect(build(protocol, stub))
    assert time.monotonic() - started < 5.0
    assert caught.value.provider == protocol.name
    assert await asyncio.to_thread(stub.closed.wait, 5)


async def test_a_5_mb_line_needs_a_raised_cap_and_then_streams_whole(
    protocol: Protocol, stub: StubServer
) -> None:
    big = "x" * 5_000_000
    chunks = rechunk(protocol.frames([big], True), 4096)
    stub.enqueue(Reply(chunks), Reply(chunks))
    with pytest.raises(ProviderError, match="longer than 1048576 bytes"):
        await collect(build(protocol, stub))
    deltas, result = await collect(build(protocol, stub, max_line_bytes=8 << 20))
    assert result.content == big
    assert deltas == [ContentDelta(big)]


@pytest.mark.parametrize(("value", "error"), [(0, ValueError), (True, TypeError), ("1", TypeError)])
def test_a_bad_line_cap_names_the_field(
    protocol: Protocol, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match="max_line_bytes"):
        protocol.make(model="m", base_url="http://h", max_line_bytes=value)
