"""A chat run's trace in OpenTelemetry's GenAI conventions: under the websocket that started
it, ``invoke_agent`` with a ``chat`` span per model request and an ``execute_tool`` span per
call; a delegate's child job as a child ``invoke_agent``; an HTTP tool's request carrying the
trace on (``traceparent``); a call held for approval as an event. Message content only when
the operator opted in."""

from __future__ import annotations

import json
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents.models import AuthorityPolicy, AuthorityRule, Tool
from agents.routing import websocket_urlpatterns
from conversations.models import Conversation, Run
from orkestrel.telemetry.asgi import traced
from tests.providers.turns import reply
from tests.telemetry import (  # noqa: F401 - fixtures
    content_captured,
    named,
    one,
    parent_of,
    span_id,
    spans,
    trace_id,
)

from .sockets import ORIGIN, until

pytestmark = pytest.mark.django_db(transaction=True)

TASK = {"profile": "helper", "task": "find the answer"}
WRITE = {"operation": "write", "path": "a.md", "content": "A"}


@pytest.fixture(autouse=True)
def allow_loopback(settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "HTTP_FETCH_ALLOW_HOSTS": ["127.0.0.1"]}


@pytest.fixture
def chat(user, delegating, loopback) -> Conversation:
    """The ``lead`` profile with a delegate, an HTTP tool, and the workspace behind an ask."""
    conversation = delegating(user)
    lead = conversation.profile
    lookup = Tool(
        name="lookup",
        kind=Tool.Kind.HTTP,
        url_template=f"{loopback.url}/items/{{item_id}}",
        parameters={"type": "object", "properties": {"item_id": {"type": "string"}}},
        description="Look an item up.",
    )
    lookup.save()
    workspace = Tool.objects.create(name="workspace", kind="builtin")
    lead.tools.add(lookup, workspace)
    policy = AuthorityPolicy.objects.create(name="careful")
    AuthorityRule.objects.create(
        policy=policy, position=1, tool_glob="workspace", zone="files", verdict="ask"
    )
    lead.authority_policy = policy
    lead.save()
    return conversation


async def socket_on(user: Any, conversation: Conversation) -> WebsocketCommunicator:
    # The project's server span per socket (``orkestrel.asgi``'s ``traced``) around the route.
    socket = WebsocketCommunicator(
        traced(URLRouter(websocket_urlpatterns)),
        f"/ws/conversations/{conversation.id}/",
        headers=ORIGIN,
    )
    socket.scope["user"] = user
    connected, code = await socket.connect()
    assert connected, code
    await socket.receive_json_from(timeout=5)
    return socket


async def test_a_run_with_a_delegate_an_http_tool_and_an_approval_is_one_span_tree(
    user,
    chat,
    stub,
    manager,
    quick_jobs,
    loopback,
    spans,  # noqa: F811
):
    stub.enqueue(
        reply("openai", calls=[("c1", "delegate", TASK)]),
        reply("openai", ["Forty-two."]),  # the helper's answer
        reply("openai", calls=[("c2", "lookup", {"item_id": "a"})]),
        reply("openai", calls=[("c3", "workspace", WRITE)]),
    )
    socket = await socket_on(user, chat)
    await socket.send_json_to({"type": "send", "content": "go"})
    frames = await until(socket, "finish")
    assert frames[-1]["result"]["stop"] == "awaiting_approval"
    await socket.disconnect()
    run = await sync_to_async(Run.objects.get)(conversation=chat)
    ended = spans.get_finished_spans()

    server = _server(ended)
    lead = one(ended, "invoke_agent lead")
    helper = one(ended, "invoke_agent helper")
    # One trace, from the socket down to the child job's model request.
    assert {trace_id(span) for span in ended} == {trace_id(server)}
    assert parent_of(lead) == span_id(server)
    assert lead.attributes is not None
    assert lead.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert lead.attributes["gen_ai.agent.name"] == "lead"
    assert lead.attributes["gen_ai.conversation.id"] == str(chat.id)
    assert lead.attributes["orkestrel.run.id"] == run.pk
    assert lead.attributes["orkestrel.run.status"] == "awaiting_approval"
    assert [event.name for event in lead.events] == ["orkestrel.approval.wait"]

    chats = named(ended, "chat m")
    leads = [span for span in chats if parent_of(span) == span_id(lead)]
    assert len(leads) == 3 and len(chats) == 4
    first = leads[0].attributes
    assert first is not None
    assert first["gen_ai.operation.name"] == "chat"
    assert first["gen_ai.provider.name"] == "openai"
    assert first["gen_ai.request.model"] == "m"
    assert first["gen_ai.response.model"]
    assert first["gen_ai.response.finish_reasons"] == ("tool_calls",)
    assert (first["gen_ai.usage.input_tokens"], first["gen_ai.usage.output_tokens"]) == (10, 5)
    assert first["gen_ai.usage.cache_read.input_tokens"] == 0
    assert first["gen_ai.usage.reasoning.output_tokens"] == 0
    assert first["orkestrel.time_to_first_chunk"] >= 0
    # No message content unless the operator opted in.
    assert "gen_ai.output.messages" not in first

    delegate = one(ended, "execute_tool delegate")
    assert parent_of(delegate) == span_id(lead)
    assert delegate.attributes is not None
    assert delegate.attributes["gen_ai.tool.name"] == "delegate"
    assert delegate.attributes["gen_ai.tool.call.id"] == "c1"
    assert delegate.attributes["orkestrel.authority.decision"] == "allow"
    # The sub-agent is a child of the call that started it, with its own model request.
    assert parent_of(helper) == span_id(delegate)
    assert helper.attributes is not None and helper.attributes["orkestrel.job.id"]
    (helper_chat,) = [span for span in chats if parent_of(span) == span_id(helper)]
    assert helper_chat.attributes is not None
    assert helper_chat.attributes["gen_ai.response.finish_reasons"] == ("stop",)

    lookup = one(ended, "execute_tool lookup")
    assert parent_of(lookup) == span_id(lead)
    # The HTTP tool's request carried the trace on, from its own span.
    ((_, headers),) = loopback.requests
    version, trace, parent, _flags = headers["traceparent"].split("-")
    assert (int(trace, 16), int(parent, 16)) == (trace_id(lead), span_id(lookup))

    held = one(ended, "execute_tool workspace")
    assert held.attributes is not None
    assert held.attributes["orkestrel.authority.decision"] == "ask"
    assert held.attributes["orkestrel.authority.rule"] == "#1 workspace → ask"
    assert held.attributes["orkestrel.authority.zone"] == "files"
    assert held.attributes["orkestrel.tool.outcome"] == "held"
    assert [event.name for event in held.events] == ["orkestrel.approval.wait"]


def _server(ended):
    (server,) = [span for span in ended if span.parent is None]
    return server


async def test_message_content_goes_in_spans_only_when_the_operator_opts_in(
    user,
    chat,
    stub,
    manager,
    spans,  # noqa: F811
    content_captured,  # noqa: F811
):
    stub.enqueue(
        reply("openai", calls=[("c1", "lookup", {"item_id": "b"})]),
        reply("openai", ["It is ", "b."]),
    )
    socket = await socket_on(user, chat)
    await socket.send_json_to({"type": "send", "content": "look up b"})
    await until(socket, "finish")
    await socket.disconnect()
    ended = spans.get_finished_spans()
    answer = named(ended, "chat m")[-1].attributes
    assert answer is not None
    (message,) = json.loads(str(answer["gen_ai.output.messages"]))
    assert message["parts"] == [{"type": "text", "content": "It is b."}]
    lookup = one(ended, "execute_tool lookup").attributes
    assert lookup is not None
    assert json.loads(str(lookup["gen_ai.tool.call.arguments"])) == {"item_id": "b"}
