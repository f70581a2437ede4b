"""A run that waits for a person's approval, seen through ``/v1`` with the official SDK: never
an empty success. The Responses API completes with ``mcp_approval_request`` items and goes on
from ``mcp_approval_response`` items; chat completions answers ``409`` ``approval_required``.
Either way the approval is decidable through ``/api/approvals/`` too."""

from __future__ import annotations

import json

import openai
import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from agents.models import AgentProfile, AuthorityPolicy, AuthorityRule
from agents.runs import run_manager
from conversations.models import Conversation, Run, ToolApproval
from tests.providers.turns import reply
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "notes.md", "content": "hello"}
SHOPPING_LIST = {"operation": "write", "path": "todo.md", "content": "buy milk"}
ASK = [{"role": "user", "content": "write my notes"}]


@pytest.fixture
def careful(editor) -> AgentProfile:
    """The ``editor`` profile (the workspace tool, on the stub model): writes ask its owner."""
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy,
        position=1,
        tool_glob="workspace",
        conditions={"operation": {"in": ["write", "remove"]}},
        zone="files",
        verdict="ask",
    )
    return editor(authority_policy=policy)


@pytest.fixture
def api(alice_key) -> AsyncClient:
    return AsyncClient(authorization=f"Bearer {alice_key}")


async def pending(api: AsyncClient) -> list[dict]:
    return (await api.get("/api/approvals/")).json()["results"]


async def last_run(owner) -> Run:
    conversation = await sync_to_async(Conversation.objects.get)(owner=owner)
    await run_manager.wait(str(conversation.pk))
    return await sync_to_async(
        lambda: Run.objects.filter(conversation=conversation).order_by("-id").first()
    )()


@sync_to_async
def files(owner) -> list[str]:
    conversation = Conversation.objects.get(owner=owner)
    stored = DjangoWorkspaceStore(owner=owner).get_sync(str(conversation.workspace_id))
    return sorted(file["path"] for file in stored["files"])


# -- chat completions -------------------------------------------------------------------------


async def test_a_held_call_is_a_conflict_naming_its_approval_which_the_api_decides(
    sdk, careful, stub, api, alice
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Done."]))
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().chat.completions.create(model="editor", messages=ASK)
    (approval,) = await pending(api)
    assert caught.value.code == "approval_required"
    assert f"approval {approval['id']}: workspace" in caught.value.message
    assert f"/api/approvals/{approval['id']}/decide/" in caught.value.message
    assert approval["conversation"] in caught.value.message
    assert (await last_run(alice)).status == "awaiting_approval"

    decided = await api.post(
        f"/api/approvals/{approval['id']}/decide/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert decided.status_code == 200
    after = await last_run(alice)
    assert (after.status, after.content) == ("done", "Done.")
    assert await files(alice) == ["notes.md"]


async def test_a_streamed_held_call_ends_with_the_error_then_done_and_no_finish_reason(
    sdk, careful, stub, api
):
    stub.enqueue(reply("openai", ["Let me write that."], calls=[("c1", "workspace", WRITE)]))
    stream = await sdk().chat.completions.create(model="editor", messages=ASK, stream=True)
    chunks = []
    with pytest.raises(openai.APIError) as caught:
        async for chunk in stream:
            chunks.append(chunk)
    (approval,) = await pending(api)
    assert caught.value.code == "approval_required"
    assert f"approval {approval['id']}" in caught.value.message
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == "Let me write that."
    assert all(c.choices[0].finish_reason is None for c in chunks)

    # On the wire: the error event, then [DONE], and no chunk with a finish_reason before.
    stub.enqueue(reply("openai", calls=[("c2", "workspace", SHOPPING_LIST)]))
    raw = await api.post(
        "/v1/chat/completions",
        {"model": "editor", "messages": ASK, "stream": True},
        content_type="application/json",
    )
    body = b"".join([part async for part in raw.streaming_content]).decode()
    events = [line[6:] for line in body.split("\n\n") if line.startswith("data: ")]
    assert events[-1] == "[DONE]"
    assert json.loads(events[-2])["error"]["code"] == "approval_required"
    assert all(
        choice["finish_reason"] is None
        for event in events[:-2]
        for choice in json.loads(event)["choices"]
    )


# -- responses --------------------------------------------------------------------------------


async def test_a_held_call_completes_with_an_approval_request_and_an_approval_goes_on(
    sdk, careful, stub, api, alice
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Written."]))
    first = await sdk().responses.create(model="editor", input="write my notes")
    assert first.status == "completed" and first.incomplete_details is None
    (request,) = first.output
    assert (request.type, request.name, request.server_label) == (
        "mcp_approval_request",
        "workspace",
        "orkestrel",
    )
    assert json.loads(request.arguments) == WRITE
    (approval,) = await pending(api)
    assert request.id == f"mcpr_{approval['id']}"
    assert await files(alice) == [] and len(stub.requests) == 1

    second = await sdk().responses.create(
        model="editor",
        previous_response_id=first.id,
        input=[
            {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": True}
        ],
    )
    assert (second.status, second.output_text) == ("completed", "Written.")
    assert await files(alice) == ["notes.md"]
    row = await sync_to_async(ToolApproval.objects.select_related("decided_by").get)()
    assert (row.status, row.decided_by.username) == ("approved", "alice")
    assert await pending(api) == []
    # The first response still shows what it asked; the second continues the same conversation.
    fetched = await sdk().responses.retrieve(first.id)
    assert [item.type for item in fetched.output] == ["mcp_approval_request"]
    assert (await sdk().responses.retrieve(second.id)).output_text == "Written."
    assert await sync_to_async(Conversation.objects.filter(owner=alice).count)() == 1


async def test_a_denial_with_its_reason_reaches_the_model_and_nothing_runs(
    sdk, careful, stub, alice
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["OK."]))
    first = await sdk().responses.create(model="editor", input="write my notes")
    second = await sdk().responses.create(
        model="editor",
        previous_response_id=first.id,
        input=[
            {
                "type": "mcp_approval_response",
                "approval_request_id": first.output[0].id,
                "approve": False,
                "reason": "not today",
            }
        ],
    )
    assert second.output_text == "OK."
    tool = next(m for m in stub.requests[1].json()["messages"] if m["role"] == "tool")
    assert tool["content"] == json.dumps("denied by alice: not today")
    assert await files(alice) == []


async def test_a_streamed_held_call_sends_the_request_item_and_the_continuation_streams(
    sdk, careful, stub, alice
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Written."]))
    stream = await sdk().responses.create(model="editor", input="write my notes", stream=True)
    events = [event async for event in stream]
    added = [e.item for e in events if e.type == "response.output_item.added"]
    done = [e.item for e in events if e.type == "response.output_item.done"]
    assert [item.type for item in added] == [item.type for item in done] == ["mcp_approval_request"]
    assert events[-1].type == "response.completed"
    completed = events[-1].response
    assert [item.id for item in completed.output] == [added[0].id]

    stream = await sdk().responses.create(
        model="editor",
        previous_response_id=completed.id,
        input=[
            {"type": "mcp_approval_response", "approval_request_id": added[0].id, "approve": True}
        ],
        stream=True,
    )
    events = [event async for event in stream]
    assert events[-1].type == "response.completed"
    assert events[-1].response.output_text == "Written."
    assert await files(alice) == ["notes.md"]


async def test_answers_must_name_requests_of_the_previous_response_and_answer_every_one(
    sdk, careful, stub, api
):
    stub.enqueue(
        reply("openai", calls=[("c1", "workspace", WRITE), ("c2", "workspace", SHOPPING_LIST)]),
        reply("openai", ["Both."]),
    )
    first = await sdk().responses.create(model="editor", input="write both")
    one, two = (item.id for item in first.output)

    def answer(request_id: str) -> dict:
        return {"type": "mcp_approval_response", "approval_request_id": request_id, "approve": True}

    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(model="editor", input=[answer(one)])
    assert caught.value.code == "missing_previous_response_id"
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(
            model="editor", previous_response_id=first.id, input=[answer("mcpr_999999")]
        )
    assert caught.value.body["param"] == "input[0].approval_request_id"
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().responses.create(
            model="editor", previous_response_id=first.id, input=[answer(one)]
        )
    assert caught.value.code == "approval_response_missing" and two in caught.value.message
    # Refused answers decided nothing: both still wait.
    assert len(await pending(api)) == 2

    both = await sdk().responses.create(
        model="editor", previous_response_id=first.id, input=[answer(one), answer(two)]
    )
    assert both.output_text == "Both."


async def test_an_approval_decided_through_the_api_keeps_its_decision_and_the_answer_follows(
    sdk, careful, stub, api, alice
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Written."]))
    first = await sdk().responses.create(model="editor", input="write my notes")
    (approval,) = await pending(api)
    decided = await api.post(
        f"/api/approvals/{approval['id']}/decide/",
        {"decision": "approve"},
        content_type="application/json",
    )
    assert decided.status_code == 200
    await last_run(alice)
    second = await sdk().responses.create(
        model="editor",
        previous_response_id=first.id,
        input=[
            {
                "type": "mcp_approval_response",
                "approval_request_id": first.output[0].id,
                "approve": False,
            }
        ],
    )
    assert second.output_text == "Written." and await files(alice) == ["notes.md"]


async def test_a_new_message_into_a_paused_conversation_names_its_approvals(
    sdk, careful, stub, api
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    first = await sdk().responses.create(model="editor", input="write my notes")
    with pytest.raises(openai.ConflictError) as caught:
        await sdk().responses.create(
            model="editor", previous_response_id=first.id, input="and another thing"
        )
    (approval,) = await pending(api)
    assert caught.value.code == "approval_required"
    assert f"approval {approval['id']}" in caught.value.message
