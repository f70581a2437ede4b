"""Documents through ``/v1`` with the official ``openai`` SDK: a ``file`` content part on chat
completions and an ``input_file`` on Responses, each a real PDF made here, reach the model
(whole or as text, as its endpoint says) and are stored with the message; too large or too
long is a clear 4xx and stores nothing."""

from __future__ import annotations

import base64

import openai
import pytest
from asgiref.sync import sync_to_async

from conversations.models import Conversation, Message
from tests.providers.turns import reply

from .files import data_url, make_pdf

pytestmark = pytest.mark.django_db(transaction=True)

INVOICE = make_pdf(["Invoice 4471: total due 930 euros.", "Terms: thirty days."])


@sync_to_async
def _stored_user_message() -> Message:
    return Message.objects.filter(role="user").latest("created")


async def test_a_file_part_reaches_a_reading_model_as_a_file_and_is_stored(sdk, reader, stub):
    await sync_to_async(reader)("openai", True)
    stub.enqueue(reply("openai", ["930 euros."]))
    completion = await sdk().chat.completions.create(
        model="reader",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is due?"},
                    {
                        "type": "file",
                        "file": {"filename": "invoice.pdf", "file_data": data_url(INVOICE)},
                    },
                ],
            }
        ],
    )
    assert completion.choices[0].message.content == "930 euros."
    parts = stub.requests[-1].json()["messages"][-1]["content"]
    assert parts[1] == {
        "type": "file",
        "file": {"filename": "invoice.pdf", "file_data": data_url(INVOICE)},
    }
    message = await _stored_user_message()
    [document] = message.documents
    assert (document["name"], document["pages"]) == ("invoice.pdf", 2)
    assert base64.b64decode(document["data"]) == INVOICE
    assert document["texts"] == ["Invoice 4471: total due 930 euros.", "Terms: thirty days."]


async def test_an_input_file_reaches_a_text_model_as_its_extracted_text(sdk, reader, stub):
    await sync_to_async(reader)("openai", False)
    stub.enqueue(reply("openai", ["Thirty days."]))
    response = await sdk().responses.create(
        model="reader",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Which terms?"},
                    {
                        "type": "input_file",
                        "filename": "invoice.pdf",
                        "file_data": data_url(INVOICE),
                    },
                ],
            }
        ],
    )
    assert response.output_text == "Thirty days."
    parts = stub.requests[-1].json()["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "Which terms?"}
    assert parts[1]["text"].startswith(
        '<document name="invoice.pdf" type="application/pdf" pages=2>'
    )
    assert "--- page 2 ---\nTerms: thirty days." in parts[1]["text"]
    message = await _stored_user_message()
    assert base64.b64decode(message.documents[0]["data"]) == INVOICE
    assert "Invoice 4471" in message.document_text


async def test_a_too_large_or_too_long_file_is_a_clear_4xx_and_nothing_is_stored(
    sdk, reader, settings
):
    await sync_to_async(reader)()
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_DOCUMENT_PAGES": 1}
    file = {"type": "file", "file": {"filename": "invoice.pdf", "file_data": data_url(INVOICE)}}
    with pytest.raises(openai.BadRequestError) as long:
        await sdk().chat.completions.create(
            model="reader", messages=[{"role": "user", "content": [file]}]
        )
    assert long.value.code == "document_too_many_pages"
    assert "2 pages; at most 1" in long.value.message

    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_DOCUMENT_BYTES": 64}
    with pytest.raises(openai.APIStatusError) as large:
        await sdk().responses.create(
            model="reader",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_file", "filename": "i.pdf", "file_data": data_url(INVOICE)}
                    ],
                }
            ],
        )
    assert large.value.status_code == 413
    assert large.value.code == "document_too_large"

    with pytest.raises(openai.BadRequestError) as uploaded:
        await sdk().chat.completions.create(
            model="reader",
            messages=[
                {"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}
            ],
        )
    assert "file_id" in uploaded.value.message
    assert not await sync_to_async(Conversation.objects.exists)()
