"""Usage and cost of a run, and a context meter that reads the same live and after a reload.

A real run over the websocket against a loopback OpenAI-compatible server that reports cached
input and reasoning, on an endpoint whose model has prices.
"""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.api.serializers import ConversationSerializer, RunSerializer
from agents.models import AgentProfile, ProviderEndpoint
from agents.runs.records import owned_run
from conversations import services
from conversations.models import Conversation
from tests.providers.server import Reply, sse

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)

PRICES = {"input": 2, "output": 8, "cache_read": 0.5}
# 86 uncached input tokens at $2, 1920 cached at $0.50, 300 out at $8 (per million).
COST = "0.003532"


def answer(text: str) -> list[bytes]:
    """One Chat Completions turn whose usage has OpenAI's details."""
    choice = {"index": 0, "delta": {"content": text}, "finish_reason": None}
    done = {"index": 0, "delta": {}, "finish_reason": "stop"}
    usage = {
        "prompt_tokens": 2006,
        "completion_tokens": 300,
        "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920},
        "completion_tokens_details": {"reasoning_tokens": 192},
    }
    return sse(
        {"object": "chat.completion.chunk", "choices": [choice]},
        {"object": "chat.completion.chunk", "choices": [done]},
        {"object": "chat.completion.chunk", "choices": [], "usage": usage},
        done=True,
    )


@sync_to_async
def priced_conversation(user, stub) -> Conversation:
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0, prices={"m": PRICES}
    )
    profile = AgentProfile.objects.create(
        slug="priced", name="Priced", model="stub/m", context_window=8000
    )
    return Conversation.objects.create(owner=user, title="priced", profile=profile)


@sync_to_async
def bodies(user, conversation: Conversation, run_id: int) -> tuple[dict[str, Any], ...]:
    state = services.conversation_state(user=user, conversation_id=conversation.pk)
    record = owned_run(user.pk, run_id)
    run = RunSerializer(record).data
    body = ConversationSerializer(Conversation.objects.get(pk=conversation.pk)).data
    return state, run, body


async def test_a_run_carries_every_counter_and_its_cost_and_the_meter_survives_a_reload(
    user, stub, manager
):
    conversation = await priced_conversation(user, stub)
    stub.enqueue(Reply(answer("Hello.")))
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "hi"})
    frames = await frames_until(socket, "finish", timeout=10)
    await socket.disconnect()
    (usage,) = [frame for frame in frames if frame["type"] == "usage"]
    counters = {
        "prompt": 2006,
        "completion": 300,
        "total": 2306,
        "cache_read": 1920,
        "cache_write": 0,
        "reasoning": 192,
    }
    assert {key: usage["usage"][key] for key in counters} == counters
    finish = frames[-1]
    # The provider's count of the prompt, not an estimate; the same once the page reloads.
    live = {"used": 2006, "window": 8000, "approximate": False}
    assert usage["context"] == finish["context"] == live
    state, run, body = await bodies(user, conversation, finish["run"])
    assert state["context"] == live
    assert state["usage"] == run["usage"] == body["usage"] == {**counters, "cost": COST}
    # Live, the call's cost and the conversation's; the answer's with its finish.
    assert usage["usage"]["cost"] == usage["total"]["cost"] == COST
    assert finish["result"]["usage"]["cost"] == COST


async def test_without_a_price_the_cost_is_null_not_zero(user, stub, manager):
    conversation = await priced_conversation(user, stub)
    await sync_to_async(ProviderEndpoint.objects.filter(name="stub").update)(prices={})
    stub.enqueue(Reply(answer("Hello.")))
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "hi"})
    frames = await frames_until(socket, "finish", timeout=10)
    await socket.disconnect()
    state, run, body = await bodies(user, conversation, frames[-1]["run"])
    assert state["usage"]["total"] == run["usage"]["total"] == 2306
    assert state["usage"]["cost"] is run["usage"]["cost"] is body["usage"]["cost"] is None
