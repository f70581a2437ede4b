"""A manual fold whose summary comes back blank folds nothing, over the websocket: the socket
that asked is refused with ``compaction_failed``, every tab gets the notice, the history stays.
"""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message, Section
from conversations.stores import DjangoConversationStore
from orkestrel.core import create_conversation
from tests.providers.server import Reply
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

HISTORY = [f"message number {index}" for index in range(8)]


@sync_to_async
def talked(user, stub) -> Conversation:
    """A conversation of eight messages on a model the stub plays."""
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    profile = AgentProfile.objects.create(slug="plain", name="Plain", model="stub/m")
    conversation = Conversation.objects.create(owner=user, title="long", profile=profile)
    kit = create_conversation(id=str(conversation.pk))
    for index, text in enumerate(HISTORY):
        kit.add({"role": "user" if index % 2 == 0 else "assistant", "content": text})
    DjangoConversationStore(owner=user).set_sync(kit.snapshot())
    return conversation


@sync_to_async
def stored(conversation) -> tuple[int, list[str]]:
    """The sections and the live messages' texts, as the database holds them."""
    sections = Section.objects.filter(conversation=conversation).count()
    texts = list(
        Message.objects.filter(conversation=conversation, section__isnull=True)
        .order_by("position")
        .values_list("content", flat=True)
    )
    return sections, texts


async def until_both(socket, first: str, second: str) -> list[dict]:
    """Frames until one of each kind came (a refusal and a broadcast: either may be first)."""
    frames = await until(socket, first)
    if not any(frame["type"] == second for frame in frames):
        frames += await until(socket, second)
    return frames


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "compact"},
        {"type": "compact", "focus": "names"},
        {"type": "send", "content": "/compact"},
    ],
    ids=["compact-frame", "compact-with-focus", "slash-compact"],
)
async def test_a_blank_summary_is_refused_and_every_tab_is_told(user, stub, manager, frame):
    conversation = await talked(user, stub)
    stub.enqueue(reply("openai", ["  \n "]))
    asking, _ = await connect(user, conversation)
    watching, _ = await connect(user, conversation)

    await asking.send_json_to(frame)

    frames = await until_both(asking, "error", "notice")
    (notice,) = [f for f in frames if f["type"] == "notice"]
    assert notice["code"] == "compaction_failed" and "no summary" in notice["message"]
    (error,) = [f for f in frames if f["type"] == "error"]
    assert error["code"] == "compaction_failed"
    assert not any(f["type"] == "compaction" for f in frames)
    seen = await until(watching, "notice")
    assert seen[-1]["code"] == "compaction_failed"
    assert await stored(conversation) == (0, HISTORY)
    # The state a reload reads: no recap, the whole history.
    await asking.send_json_to({"type": "resync"})
    state = (await until(asking, "state"))[-1]
    assert state["sections"] == []
    assert [m["content"] for m in state["messages"]] == HISTORY
    assert len(stub.requests) == 1
    await asking.disconnect()
    await watching.disconnect()


async def test_a_failed_summary_call_is_refused_the_same_way(user, stub, manager):
    conversation = await talked(user, stub)
    stub.enqueue(Reply([b"{}"], status=500, content_type="x/json"))
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "compact"})
    frames = await until_both(socket, "error", "notice")
    assert [f["code"] for f in frames if f["type"] in ("error", "notice")] in (
        ["compaction_failed"] * 2,
    )
    assert await stored(conversation) == (0, HISTORY)
    await socket.disconnect()
