"""A document's text counts in a fold as any message's: the summarizer reads it (a model
without document input, as its text), and the folded original keeps the document whole."""

from __future__ import annotations

import base64

import pytest
from asgiref.sync import sync_to_async
from django.test import AsyncClient

from conversations.models import Message
from conversations.stores import DjangoConversationStore
from orkestrel.core import create_conversation
from orkestrel.document_reader import read_document
from tests.providers.turns import reply

from .files import make_pdf

pytestmark = pytest.mark.django_db(transaction=True)

LEASE = make_pdf(["The lease ends on 31 March; the deposit is 1200 euros."])


@sync_to_async
def _talked(alice, chat):
    """Eight messages, the first carrying the lease."""
    conversation = chat()
    kit = create_conversation(id=str(conversation.pk))
    document = read_document("lease.pdf", LEASE).to_dict()
    kit.add({"role": "user", "content": "Here is the lease.", "documents": [document]})
    for index in range(1, 8):
        kit.add({"role": "user" if index % 2 == 0 else "assistant", "content": f"turn {index}"})
    DjangoConversationStore(owner=alice).set_sync(kit.snapshot())
    return conversation


async def test_the_summarizer_reads_a_documents_text_and_the_original_keeps_it(
    alice, alice_key, chat, stub
):
    conversation = await _talked(alice, chat)
    # The fold's summary, then the conversation's rollup.
    stub.enqueue(
        reply("openai", ["Lease to 31 March, deposit 1200."]), reply("openai", ["Rollup."])
    )
    client = AsyncClient(authorization=f"Bearer {alice_key}")

    response = await client.post(
        f"/api/conversations/{conversation.pk}/compact/", {}, content_type="application/json"
    )

    assert response.status_code == 200, response.content
    asked = stub.requests[0].json()["messages"]
    lease = [m for m in asked if isinstance(m["content"], list)][0]["content"]
    assert lease[0] == {"type": "text", "text": "Here is the lease."}
    assert "the deposit is 1200 euros." in lease[1]["text"]
    original = await sync_to_async(
        lambda: Message.objects.get(conversation=conversation, content="Here is the lease.")
    )()
    assert original.section_id is not None
    assert base64.b64decode(original.documents[0]["data"]) == LEASE
    assert "1200 euros" in original.document_text
