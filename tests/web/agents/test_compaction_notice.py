"""Automatic compaction that fails is said, never silent: the run goes on and a notice tells."""

from __future__ import annotations

import logging

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation
from conversations.stores import DjangoConversationStore
from orkestrel.core import create_conversation
from tests.providers.server import Reply
from tests.providers.turns import reply

from .test_consumers import connect, frames_until

pytestmark = pytest.mark.django_db(transaction=True)


@sync_to_async
def crowded(user, stub) -> Conversation:
    """A conversation whose history is past its profile's tiny context window."""
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(
        slug="tight", name="Tight", model="stub/m", context_window=40, keep=2
    )
    conversation = Conversation.objects.create(owner=user, title="long", profile=profile)
    kit = create_conversation(id=str(conversation.pk))
    for index in range(8):
        role = "user" if index % 2 == 0 else "assistant"
        kit.add({"role": role, "content": f"message number {index} with a few words in it"})
    DjangoConversationStore(owner=user).set_sync(kit.snapshot())
    return conversation


async def test_a_failed_automatic_compaction_is_a_notice_and_the_answer_goes_on(
    user,
    stub,
    manager,
    caplog,
):
    conversation = await crowded(user, stub)
    # The summarizer's request fails; the answer's succeeds.
    stub.enqueue(
        Reply([b"{}"], status=500, content_type="x/json"), reply("openai", ["Still here."])
    )
    socket, _ = await connect(user, conversation)
    with caplog.at_level(logging.WARNING, logger="agents.runs.active"):
        await socket.send_json_to({"type": "send", "content": "and now?"})
        frames = await frames_until(socket, "finish", timeout=10)
    (notice,) = [frame for frame in frames if frame["type"] == "notice"]
    assert notice["code"] == "compaction_failed"
    assert frames[-1]["result"]["stop"] == "done"
    assert "".join(f["content"] for f in frames if f["type"] == "token") == "Still here."
    assert any("automatic compaction" in record.getMessage() for record in caplog.records)
    await socket.disconnect()
