"""Forking a conversation and choosing its model and thinking level, through the REST API."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation, Message
from conversations.stores import DjangoConversationStore
from orkestrel.core import create_conversation, create_workspace
from tests.providers.turns import reply
from workspaces.models import Workspace
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def stubbed(stub) -> AgentProfile:
    """A profile on the stub server whose endpoint lists two models."""
    ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", models=["small", "large"]
    )
    return AgentProfile.objects.create(slug="stubbed", name="Stubbed", model="stub/small")


@pytest.fixture
def chat(alice, stubbed) -> Conversation:
    """Alice's conversation of four messages, with a workspace file."""
    workspace = Workspace.objects.create(owner=alice, name="w")
    files = create_workspace(id=str(workspace.pk))
    files.write("notes.md", "hello")
    DjangoWorkspaceStore(owner=alice).set_sync(files.snapshot())
    conversation = Conversation.objects.create(
        owner=alice, title="Trip", profile=stubbed, workspace=workspace
    )
    kit = create_conversation(id=str(conversation.pk))
    for index, role in enumerate(["user", "assistant", "user", "assistant"]):
        kit.add({"id": f"m{index}", "role": role, "content": f"say {index}"})
    DjangoConversationStore(owner=alice).set_sync(kit.snapshot())
    return conversation


def tail(conversation_id) -> list[str]:
    return list(
        Message.objects.filter(conversation_id=conversation_id, section__isnull=True)
        .order_by("position")
        .values_list("message_id", flat=True)
    )


def test_a_fork_copies_the_history_through_the_message_and_leaves_the_source(api, chat):
    response = api.post(f"/api/conversations/{chat.pk}/fork/", {"message": "m1"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert body["forked_from"] == {"conversation": str(chat.pk), "message": "m1"}
    assert body["title"] == "Trip (fork)" and body["profile"] == "stubbed"
    fork = Conversation.objects.get(pk=body["id"])
    assert tail(fork.pk) == ["m0", "m1"] and tail(chat.pk) == ["m0", "m1", "m2", "m3"]
    files = DjangoWorkspaceStore(owner=chat.owner).get_sync(str(fork.workspace_id))
    assert [file["path"] for file in files["files"]] == ["notes.md"]
    assert fork.workspace_id != chat.workspace_id
    assert fork.usage_total == 0


def test_compacting_a_fork_leaves_its_source_untouched(api, chat):
    fork_id = api.post(
        f"/api/conversations/{chat.pk}/fork/", {"message": "m3"}, format="json"
    ).json()["id"]
    store = DjangoConversationStore(owner=chat.owner)
    kit = create_conversation(snapshot=store.get_sync(fork_id))
    folded = kit.snapshot()
    folded["sections"] = [{"id": "s1", "summary": "earlier", "messages": folded["messages"][:2]}]
    folded["messages"] = folded["messages"][2:]
    store.set_sync(folded)
    assert tail(fork_id) == ["m2", "m3"]
    assert tail(chat.pk) == ["m0", "m1", "m2", "m3"]
    assert not Message.objects.filter(conversation=chat, section__isnull=False).exists()


def test_a_fork_inside_a_folded_section_unfolds_its_originals_up_to_the_message(api, chat):
    store = DjangoConversationStore(owner=chat.owner)
    folded = store.get_sync(str(chat.pk))
    folded["sections"] = [{"id": "s1", "summary": "earlier", "messages": folded["messages"][:3]}]
    folded["messages"] = folded["messages"][3:]
    store.set_sync(folded)
    body = api.post(f"/api/conversations/{chat.pk}/fork/", {"message": "m1"}, format="json").json()
    copy = store.get_sync(body["id"])
    assert copy["sections"] == [] and [m["id"] for m in copy["messages"]] == ["m0", "m1"]


def test_forking_at_an_unknown_message_or_someone_elses_conversation_is_a_404(
    api, chat, bob, key_client, issue_key
):
    missing = api.post(f"/api/conversations/{chat.pk}/fork/", {"message": "nope"}, format="json")
    assert missing.status_code == 404
    stranger = key_client(issue_key(bob)).post(
        f"/api/conversations/{chat.pk}/fork/", {"message": "m1"}, format="json"
    )
    assert stranger.status_code == 404
    assert Conversation.objects.count() == 1


def test_a_conversation_chooses_its_model_and_a_refused_choice_changes_nothing(api, chat):
    url = f"/api/conversations/{chat.pk}/"
    chosen = api.patch(url, {"model": "stub/large", "thinking": "high"}, format="json")
    assert chosen.status_code == 200
    assert (chosen.json()["model"], chosen.json()["thinking"]) == ("stub/large", "high")
    refused = api.patch(url, {"title": "Renamed", "model": "elsewhere/gpt"}, format="json")
    assert refused.status_code == 400 and "model" in refused.json()["errors"]
    chat.refresh_from_db()
    assert (chat.title, chat.model) == ("Trip", "stub/large")
    bad = api.patch(url, {"thinking": "extreme"}, format="json")
    assert bad.status_code == 400 and "thinking" in bad.json()["errors"]


async def test_the_next_run_calls_the_chosen_model_with_the_chosen_thinking(alice_key, chat, stub):
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    url = f"/api/conversations/{chat.pk}/"
    await client.patch(
        url, {"model": "stub/large", "thinking": "low"}, content_type="application/json"
    )
    stub.enqueue(reply("openai", ["ok"]))
    sent = await client.post(
        f"{url}messages/?wait=true", {"content": "next"}, content_type="application/json"
    )
    assert sent.status_code == 200
    # The body is sent once the run settled: read it before looking at what the model got.
    settled = json.loads(b"".join([chunk async for chunk in sent.streaming_content]))
    assert settled["status"] == "done" and settled["content"] == "ok"
    body = stub.requests[0].json()
    assert body["model"] == "large" and body["reasoning_effort"] == "low"
    # The profile's own model is untouched: another conversation still runs it.
    profile = await sync_to_async(AgentProfile.objects.get)(slug="stubbed")
    assert profile.model == "stub/small"
