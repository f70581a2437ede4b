"""A run's log lines carry its run id, its conversation's id and its trace id, in JSON lines
as in plain text."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import sync_to_async

from conversations.models import Conversation, Run
from tests.providers.server import Reply
from tests.telemetry import one, spans, trace_id  # noqa: F401 - fixture
from tests.web.telemetry.test_logs import lines  # noqa: F401 - fixture

from .sockets import until
from .test_traces import socket_on

pytestmark = pytest.mark.django_db(transaction=True)


async def test_a_failed_runs_line_names_the_run_its_conversation_and_its_trace(
    user,
    editor,
    stub,
    manager,
    spans,  # noqa: F811
    lines,  # noqa: F811
):
    chat = await sync_to_async(
        lambda: Conversation.objects.create(owner=user, title="Notes", profile=editor())
    )()
    stub.enqueue(Reply([b'{"error": {"message": "no such model"}}'], status=400))
    socket = await socket_on(user, chat)
    await socket.send_json_to({"type": "send", "content": "hello"})
    await until(socket, "error")
    await socket.disconnect()
    run = await sync_to_async(Run.objects.get)(conversation=chat)
    (line,) = [json.loads(text) for text in lines if f"run {run.pk} failed" in text]
    assert line["run_id"] == str(run.pk)
    assert line["conversation_id"] == str(chat.id)
    agent = one(spans.get_finished_spans(), "invoke_agent editor")
    assert line["trace_id"] == format(trace_id(agent), "032x")
    assert "ProviderError" in line["exc_info"]
