"""``POST …/compact/`` (and a ``/compact`` message) whose summary comes back blank: ``409``
``compaction_failed``, the conversation's followers get the notice, nothing is folded."""

from __future__ import annotations

import json

import pytest
from django.test import AsyncClient

from agents.runs import run_manager
from tests.providers.turns import reply
from tests.web.agents.sockets import connect, until
from tests.web.agents.test_blank_summary import HISTORY, stored, talked

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize(
    ("path", "body"),
    [("compact/", {}), ("compact/", {"focus": "names"}), ("messages/", {"content": "/compact"})],
    ids=["compact", "compact-with-focus", "slash-compact"],
)
async def test_a_blank_summary_answers_409_and_the_followers_get_the_notice(
    alice, alice_key, stub, path, body
):
    conversation = await talked(alice, stub)
    stub.enqueue(reply("openai", [""]))
    follower, _ = await connect(alice, conversation)
    client = AsyncClient(authorization=f"Bearer {alice_key}")

    response = await client.post(
        f"/api/conversations/{conversation.pk}/{path}", body, content_type="application/json"
    )

    raw = (
        b"".join([chunk async for chunk in response.streaming_content])
        if response.streaming
        else response.content
    )
    assert response.status_code == 409, raw
    answer = json.loads(raw)
    assert answer["code"] == "compaction_failed" and "no summary" in answer["detail"]
    notice = (await until(follower, "notice"))[-1]
    assert notice["code"] == "compaction_failed"
    assert await stored(conversation) == (0, HISTORY)
    sections = await client.get(f"/api/conversations/{conversation.pk}/sections/")
    assert sections.json() == {"sections": []}
    assert len(stub.requests) == 1
    await follower.disconnect()
    await run_manager.drain()


async def test_a_fold_that_works_still_answers_the_section(alice, alice_key, stub):
    conversation = await talked(alice, stub)
    stub.enqueue(reply("openai", ["Eight numbered messages."]), reply("openai", ["Rollup."]))
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    response = await client.post(
        f"/api/conversations/{conversation.pk}/compact/", {}, content_type="application/json"
    )
    assert response.status_code == 200
    assert response.json()["section"]["summary"] == "Eight numbered messages."
    sections, live = await stored(conversation)
    assert sections == 1 and live == HISTORY[-2:]
