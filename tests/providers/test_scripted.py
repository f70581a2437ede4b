"""ScriptedProvider: the deterministic Provider test double."""

from __future__ import annotations

import asyncio
import time

import pytest

from orkestrel.core import (
    AbortSignal,
    ContentDelta,
    ContextFormat,
    Provider,
    ProviderAbortError,
    ProviderError,
    ProviderResult,
    ProviderStreamOptions,
    ThinkingDelta,
    TokenUsage,
    ToolCall,
    ToolDefinition,
    create_abort,
    create_message,
)
from orkestrel.providers import ScriptedCall, ScriptedProvider, ScriptedTurn

HI = (create_message({"role": "user", "content": "hi"}),)


async def collect(provider: ScriptedProvider, signal: AbortSignal | None = None) -> list[object]:
    return [item async for item in provider.stream(HI, signal or AbortSignal())]


def test_it_satisfies_the_provider_protocol_with_id_name_and_format() -> None:
    fmt = ContextFormat()
    provider = ScriptedProvider([], name="demo", format=fmt)
    assert isinstance(provider, Provider)
    assert provider.name == "demo"
    assert provider.id == "demo"
    assert provider.format is fmt
    assert ScriptedProvider([], id="p1").id == "p1"


async def test_stream_yields_thinking_then_content_deltas_then_the_result_last() -> None:
    provider = ScriptedProvider([{"thinking": ["hm", "m"], "content": ["Hel", "lo"]}])
    items = await collect(provider)
    assert items == [
        ThinkingDelta("hm"),
        ThinkingDelta("m"),
        ContentDelta("Hel"),
        ContentDelta("lo"),
        ProviderResult("Hello", "hmm"),
    ]


async def test_a_string_content_streams_as_one_delta_and_empty_deltas_are_skipped() -> None:
    provider = ScriptedProvider(["whole", {"content": ["", "a", ""]}, ""])
    assert await collect(provider) == [ContentDelta("whole"), ProviderResult("whole")]
    assert await collect(provider) == [ContentDelta("a"), ProviderResult("a")]
    assert await collect(provider) == [ProviderResult("")]


async def test_generate_returns_the_assembled_result() -> None:
    provider = ScriptedProvider(
        [ScriptedTurn(content=["a", "b"], thinking="t", stop_reason="stop")]
    )
    result = await provider.generate(HI, AbortSignal())
    assert result == ProviderResult("ab", "t", stop_reason="stop")


async def test_tool_calls_keep_given_ids_and_get_minted_ones_when_absent() -> None:
    given = ToolCall("call-1", "add", {"a": 1})
    provider = ScriptedProvider(
        [{"tools": [given, {"name": "echo", "arguments": {"text": "x"}}, {"name": "noop"}]}]
    )
    result = await provider.generate(HI, AbortSignal())
    assert result.tools is not None
    first, second, third = result.tools
    assert first == given
    assert (second.name, dict(second.arguments)) == ("echo", {"text": "x"})
    assert (third.name, dict(third.arguments)) == ("noop", {})
    assert second.id and third.id and second.id != third.id
    assert "call-1" not in (second.id, third.id)


async def test_an_empty_tools_list_reports_no_tools() -> None:
    result = await ScriptedProvider([{"content": "x", "tools": []}]).generate(HI, AbortSignal())
    assert result.tools is None


async def test_usage_is_reported_from_a_mapping_or_a_token_usage() -> None:
    provider = ScriptedProvider(
        [
            {"content": "a", "usage": {"prompt": 3, "completion": 2, "total": 5}},
            ScriptedTurn(content="b", usage=TokenUsage(1, 1, 2)),
        ]
    )
    assert (await provider.generate(HI, AbortSignal())).usage == TokenUsage(3, 2, 5)
    assert (await provider.generate(HI, AbortSignal())).usage == TokenUsage(1, 1, 2)


async def test_an_error_is_raised_before_any_delta_by_default() -> None:
    boom = RuntimeError("boom")
    provider = ScriptedProvider([{"content": ["a", "b"], "error": boom}])
    seen: list[object] = []
    with pytest.raises(RuntimeError) as caught:
        async for item in provider.stream(HI, AbortSignal()):
            seen.append(item)
    assert caught.value is boom
    assert seen == []


async def test_an_error_after_deltas_is_raised_once_they_streamed() -> None:
    provider = ScriptedProvider(
        [{"content": ["a", "b"], "error": ProviderError("late", provider="x"), "error_after": True}]
    )
    seen: list[object] = []
    with pytest.raises(ProviderError, match="late"):
        async for item in provider.stream(HI, AbortSignal()):
            seen.append(item)
    assert seen == [ContentDelta("a"), ContentDelta("b")]


async def test_a_pre_aborted_signal_raises_with_an_empty_partial_and_plays_nothing() -> None:
    provider = ScriptedProvider(["never"])
    signal = AbortSignal.aborted_with("stop")
    seen: list[object] = []
    with pytest.raises(ProviderAbortError) as caught:
        async for item in provider.stream(HI, signal):
            seen.append(item)
    assert seen == []
    assert caught.value.partial == ProviderResult("")
    assert caught.value.reason == "stop"
    with pytest.raises(ProviderAbortError):
        await provider.generate(HI, signal)
    assert provider.remaining == 1


async def test_abort_between_deltas_raises_with_what_streamed_so_far() -> None:
    abort = create_abort()
    provider = ScriptedProvider(
        [{"thinking": "why", "content": ["a", "b", "c"], "tools": [{"name": "t"}]}]
    )
    seen: list[object] = []
    with pytest.raises(ProviderAbortError) as caught:
        async for item in provider.stream(HI, abort.signal):
            seen.append(item)
            if item == ContentDelta("b"):
                abort.abort("enough")
    assert seen == [ThinkingDelta("why"), ContentDelta("a"), ContentDelta("b")]
    assert caught.value.partial == ProviderResult("ab", "why")
    assert caught.value.reason == "enough"


async def test_abort_after_the_last_delta_still_raises_instead_of_returning() -> None:
    abort = create_abort()
    provider = ScriptedProvider([{"content": ["a"], "tools": [{"name": "t"}]}])
    with pytest.raises(ProviderAbortError) as caught:
        async for _ in provider.stream(HI, abort.signal):
            abort.abort()
    assert caught.value.partial == ProviderResult("a")


async def test_abort_from_another_task_wakes_a_delayed_stream_promptly() -> None:
    abort = create_abort()
    first = asyncio.Event()
    provider = ScriptedProvider([ScriptedTurn(thinking="t", content=["a", "b"], delay=0.5)])

    async def fire() -> None:
        await first.wait()
        abort.abort("user")

    firer = asyncio.create_task(fire())
    seen: list[object] = []
    with pytest.raises(ProviderAbortError) as caught:
        async for item in provider.stream(HI, abort.signal):
            seen.append(item)
            first.set()
            received = time.monotonic()
    # The 0.5 s wait before the next delta was cut short by the abort.
    assert time.monotonic() - received < 0.4
    await firer
    assert seen == [ThinkingDelta("t")]
    assert caught.value.partial == ProviderResult("", "t")
    assert caught.value.reason == "user"


async def test_a_delayed_stream_cut_mid_wait_leaves_no_task_pending() -> None:
    abort = create_abort()
    provider = ScriptedProvider([ScriptedTurn(content=["a", "b"], delay=30.0)])
    loop = asyncio.get_running_loop()
    loop.call_soon(abort.abort, "now")
    started = time.monotonic()
    with pytest.raises(ProviderAbortError) as caught:
        await provider.generate(HI, abort.signal)
    assert time.monotonic() - started < 5.0
    assert caught.value.partial == ProviderResult("")
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_a_delay_waits_before_each_delta() -> None:
    provider = ScriptedProvider([ScriptedTurn(content=["a", "b", "c"], delay=0.02)])
    started = time.monotonic()
    result = await provider.generate(HI, AbortSignal())
    assert time.monotonic() - started >= 0.05
    assert result.content == "abc"
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_every_call_is_recorded_with_messages_tools_and_options() -> None:
    tool = ToolDefinition("add", "adds", {"type": "object"})
    options = ProviderStreamOptions(think="high")
    provider = ScriptedProvider(["a", "b"])
    await provider.generate(list(HI), AbortSignal(), [tool], options)
    await provider.generate(HI, AbortSignal())
    assert provider.calls == [
        ScriptedCall(HI, (tool,), options),
        ScriptedCall(HI, None, None),
    ]
    assert isinstance(provider.calls[0].messages, tuple)


async def test_remaining_and_assert_consumed_track_the_script() -> None:
    provider = ScriptedProvider.from_texts(["a", "b", "c"])
    assert provider.remaining == 3
    await provider.generate(HI, AbortSignal())
    assert provider.remaining == 2
    with pytest.raises(AssertionError, match="2 unplayed"):
        provider.assert_consumed()
    await provider.generate(HI, AbortSignal())
    await provider.generate(HI, AbortSignal())
    provider.assert_consumed()


async def test_from_texts_answers_each_call_with_the_next_text() -> None:
    provider = ScriptedProvider.from_texts(["one", "two"], name="t")
    assert provider.name == "t"
    assert (await provider.generate(HI, AbortSignal())).content == "one"
    assert (await provider.generate(HI, AbortSignal())).content == "two"


async def test_an_exhausted_script_raises_a_provider_error() -> None:
    provider = ScriptedProvider.from_texts(["a", "b"])
    await provider.generate(HI, AbortSignal())
    await provider.generate(HI, AbortSignal())
    with pytest.raises(ProviderError, match="script exhausted after 2 turns") as caught:
        await provider.generate(HI, AbortSignal())
    assert caught.value.provider == "scripted"


async def test_a_fallback_answers_once_the_script_is_exhausted() -> None:
    def echo(messages: tuple) -> dict:
        return {"content": f"echo: {messages[-1].content}", "tools": [{"name": "t"}]}

    provider = ScriptedProvider(["first"], fallback=echo)
    assert (await provider.generate(HI, AbortSignal())).content == "first"
    one = await provider.generate(HI, AbortSignal())
    two = await provider.generate(HI, AbortSignal())
    assert one.content == two.content == "echo: hi"
    assert one.tools is not None and two.tools is not None
    assert one.tools[0].id != two.tools[0].id
    provider.assert_consumed()


async def test_an_async_fallback_is_awaited() -> None:
    async def answer(messages: tuple) -> str:
        return f"{len(messages)} message(s)"

    provider = ScriptedProvider(fallback=answer)
    assert (await provider.generate(HI, AbortSignal())).content == "1 message(s)"


async def test_split_think_routes_raw_content_through_a_think_splitter() -> None:
    provider = ScriptedProvider(
        [{"content": ["<think>pl", "an</thi", "nk>\n\nAns", "wer"], "split_think": True}]
    )
    items = await collect(provider)
    assert items == [
        ThinkingDelta("pl"),
        ThinkingDelta("an"),
        ContentDelta("Ans"),
        ContentDelta("wer"),
        ProviderResult("Answer", "plan"),
    ]


async def test_split_think_result_content_is_corrected_by_an_implicit_open() -> None:
    provider = ScriptedProvider(
        [{"content": ["reasoning ", "here</think>", "Hi"], "split_think": True, "usage": {}}]
    )
    items = await collect(provider)
    assert items[0] == ContentDelta("reasoning ")
    assert items[-1] == ProviderResult("Hi", "reasoning here", usage=TokenUsage())


async def test_split_think_abort_partial_holds_the_clean_content_so_far() -> None:
    abort = create_abort()
    provider = ScriptedProvider([{"content": ["<think>x</think>", "a", "b"], "split_think": True}])
    with pytest.raises(ProviderAbortError) as caught:
        async for item in provider.stream(HI, abort.signal):
            if item == ContentDelta("a"):
                abort.abort()
    assert caught.value.partial == ProviderResult("a", "x")


def test_a_turn_normalizes_lists_to_tuples() -> None:
    turn = ScriptedTurn(content=["a", "b"], thinking=["t"])
    assert turn.content == ("a", "b")
    assert turn.thinking == ("t",)
    hash(turn)


@pytest.mark.parametrize(
    ("turn", "error", "field"),
    [
        ({"content": 3}, TypeError, "content"),
        ({"thinking": [1]}, TypeError, "thinking"),
        ({"tools": "x"}, TypeError, "tools"),
        ({"tools": [{"arguments": {}}]}, TypeError, "name"),
        ({"usage": 3}, TypeError, "usage"),
        ({"error": "boom"}, TypeError, "error"),
        ({"delay": -1}, ValueError, "delay"),
        ({"delay": "1"}, TypeError, "delay"),
        ({"colour": "red"}, TypeError, "colour"),
        (42, TypeError, "turn"),
    ],
)
def test_bad_turns_are_refused_naming_the_field(turn: object, error: type, field: str) -> None:
    with pytest.raises(error, match=field):
        ScriptedProvider([turn])  # type: ignore[list-item]


def test_bad_constructor_arguments_are_refused_naming_the_field() -> None:
    with pytest.raises(TypeError, match="script"):
        ScriptedProvider("abc")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="name"):
        ScriptedProvider([], name="")
    with pytest.raises(TypeError, match="fallback"):
        ScriptedProvider([], fallback="x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="format"):
        ScriptedProvider([], format={})  # type: ignore[arg-type]


async def test_cancelling_the_consumer_mid_wait_cancels_the_wait_cleanly() -> None:
    abort = create_abort()
    provider = ScriptedProvider([ScriptedTurn(content="a", delay=30.0), "next"])
    task = asyncio.create_task(provider.generate(HI, abort.signal))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.all_tasks() == {asyncio.current_task()}
    # The provider stays usable and the signal still works for the next call.
    assert (await provider.generate(HI, abort.signal)).content == "next"
