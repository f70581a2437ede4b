"""A call an ``ask`` rule holds, at ``/mcp``: a client that can answer a form is asked (an
input-required result on the 2026-07-28 revision); one that cannot gets an ``isError`` result
naming the approval. Accepting runs the call, declining denies it (the run goes on, the model
reads the refusal)."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async
from mcp.types import ElicitRequestParams, ElicitResult

from agents.models import AuthorityPolicy, AuthorityRule
from conversations.models import Conversation, Run, ToolApproval
from tests.providers.turns import reply
from workspaces.stores import DjangoWorkspaceStore

pytestmark = pytest.mark.django_db(transaction=True)

WRITE = {"operation": "write", "path": "notes.md", "content": "hello"}


@pytest.fixture
def careful(editor):
    """The ``editor`` profile whose workspace writes ask its user first."""
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy,
        position=1,
        tool_glob="workspace",
        conditions={"operation": {"in": ["write"]}},
        zone="files",
        verdict="ask",
    )
    return editor(authority_policy=policy)


def answering(*results: ElicitResult):
    """An elicitation callback giving ``results`` in turn; what it was asked is kept."""
    asked: list[ElicitRequestParams] = []
    queue = list(results)

    async def callback(context, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params)
        return queue.pop(0)

    callback.asked = asked  # type: ignore[attr-defined]
    return callback


@sync_to_async
def files(conversation: str) -> list[str]:
    found = Conversation.objects.get(pk=conversation)
    stored = DjangoWorkspaceStore(owner=found.owner).get_sync(str(found.workspace_id))
    return [file["path"] for file in stored["files"]]


def tool_result(request) -> str:
    return next(m["content"] for m in request.json()["messages"] if m["role"] == "tool")


async def test_a_client_that_answers_approves_and_the_run_goes_on(mcp, careful, stub):
    stub.enqueue(
        reply("openai", ["Let me write it."], calls=[("c1", "workspace", WRITE)]),
        reply("openai", ["Written."]),
    )
    answer = answering(ElicitResult(action="accept", content={"approve": True}))
    async with mcp(elicitation=answer) as client:
        assert client.protocol_version == "2026-07-28"  # an input-required result
        result = await client.call_tool("editor", {"message": "write my notes"})
    assert not result.is_error
    assert result.content[0].text == "Written."
    (asked,) = answer.asked
    assert "'workspace'" in asked.message and '"path": "notes.md"' in asked.message
    assert asked.requested_schema["properties"]["approve"]["type"] == "boolean"
    conversation = result.structured_content["conversation"]
    assert await files(conversation) == ["notes.md"]
    runs = await sync_to_async(
        lambda: list(Run.objects.filter(conversation_id=conversation).order_by("pk"))
    )()
    # The paused run, then the one the decision started.
    assert [run.status for run in runs] == ["done", "done"]
    assert result.structured_content["run"] == runs[1].pk
    # The answer's usage is both runs'.
    totals = sum(run.token_usage().total for run in runs)
    assert result.structured_content["usage"]["total"] == totals > 0
    approval = await ToolApproval.objects.aget(tool_call_id="c1")
    assert (approval.status, approval.run_id) == ("approved", runs[0].pk)


@pytest.mark.parametrize(
    ("answered", "model_reads"),
    [
        (ElicitResult(action="decline"), "denied by alice"),
        (
            ElicitResult(action="accept", content={"approve": False, "reason": "not today"}),
            "denied by alice: not today",
        ),
    ],
)
async def test_a_declined_form_denies_the_call_and_the_model_reads_why(
    mcp, careful, stub, answered, model_reads
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["OK."]))
    async with mcp(elicitation=answering(answered)) as client:
        result = await client.call_tool("editor", {"message": "write my notes"})
    assert not result.is_error and result.content[0].text == "OK."
    assert tool_result(stub.requests[1]) == json.dumps(model_reads)
    assert await files(result.structured_content["conversation"]) == []
    assert (await ToolApproval.objects.aget(tool_call_id="c1")).status == "denied"


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_client_that_cannot_answer_gets_an_error_naming_the_approval(
    mcp, alice_key, careful, stub, mode
):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    async with mcp(mode=mode) as client:
        result = await client.call_tool("editor", {"message": "write my notes"})
    approval = await ToolApproval.objects.aget(tool_call_id="c1")
    assert result.is_error and approval.status == "pending"
    assert result.structured_content["error"]["code"] == "approval_required"
    assert result.structured_content["approvals"] == [approval.pk]
    assert f"approval {approval.pk}: workspace" in result.content[0].text
    conversation = result.structured_content["conversation"]
    assert f"goes on in conversation {conversation}" in result.content[0].text
    run = await Run.objects.aget(conversation_id=conversation)
    assert run.status == "awaiting_approval"
    assert await files(conversation) == []
    # Until it is decided, the conversation takes no new message, and says why.
    async with mcp(mode=mode) as client:
        again = await client.call_tool(
            "editor", {"message": "and now?", "conversation": conversation}
        )
    assert again.is_error and again.structured_content["error"]["code"] == "awaiting_approval"
    assert f"approval {approval.pk}" in again.content[0].text


async def test_a_dismissed_form_leaves_the_call_waiting(mcp, careful, stub):
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]))
    async with mcp(elicitation=answering(ElicitResult(action="cancel"))) as client:
        result = await client.call_tool("editor", {"message": "write my notes"})
    approval = await ToolApproval.objects.aget(tool_call_id="c1")
    assert result.is_error and approval.status == "pending"
    assert result.structured_content["approvals"] == [approval.pk]
    assert len(stub.requests) == 1
