"""Documents attached in the chat (uploaded, then named by a ``send`` frame) and over the REST
API reach the model (the PDF itself, or its text), are stored whole with the message, shown in
the transcript, found by search, and refused clearly when too large or too long."""

from __future__ import annotations

import base64
import json
import uuid
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import AsyncClient

from agents.runs import run_service
from conversations.models import Attachment, Message, PendingMessage
from tests.providers.turns import reply
from tests.web.agents.sockets import connect, until

from .files import make_docx, make_pdf

pytestmark = pytest.mark.django_db(transaction=True)

REPORT = make_pdf(["Quarterly revenue grew by twelve percent.", None, "Appendix of figures."])


async def _upload(client: AsyncClient, conversation: Any, name: str, data: bytes, mime: str):
    return await client.post(
        f"/api/conversations/{conversation.pk}/attachments/",
        {"file": SimpleUploadedFile(name, data, content_type=mime)},
    )


@sync_to_async
def _user_message(conversation: Any) -> Message:
    return Message.objects.filter(conversation=conversation, role="user").latest("position")


async def _send(client: AsyncClient, conversation: Any, content: str, ids: list[str]) -> Any:
    sent = await client.post(
        f"/api/conversations/{conversation.pk}/messages/?wait=true",
        {"content": content, "attachments": ids},
        content_type="application/json",
    )
    raw = b"".join([c async for c in sent.streaming_content]) if sent.streaming else sent.content
    assert sent.status_code == 200, raw
    return json.loads(raw)


async def test_a_pdf_attached_over_rest_reaches_a_reading_model_whole_and_is_stored(
    alice_key, chat, stub
):
    conversation = await sync_to_async(chat)("openai", True)
    client = AsyncClient(authorization=f"Bearer {alice_key}")

    uploaded = await _upload(client, conversation, "report.pdf", REPORT, "application/pdf")

    assert uploaded.status_code == 201, uploaded.content
    attached = uploaded.json()
    assert (attached["name"], attached["mime"], attached["pages"]) == (
        "report.pdf",
        "application/pdf",
        3,
    )
    assert attached["size"] == len(REPORT)
    assert attached["preview"] == "Quarterly revenue grew by twelve percent."

    stub.enqueue(reply("openai", ["Revenue grew."]))
    assert (await _send(client, conversation, "Summarize it.", [attached["id"]]))[
        "status"
    ] == "done"

    # At the model's boundary: the PDF itself, as a ``file`` part.
    parts = stub.requests[-1].json()["messages"][-1]["content"]
    encoded = base64.b64encode(REPORT).decode()
    assert parts == [
        {"type": "text", "text": "Summarize it."},
        {
            "type": "file",
            "file": {
                "filename": "report.pdf",
                "file_data": f"data:application/pdf;base64,{encoded}",
            },
        },
    ]
    # Stored whole with the message; the attachment is gone.
    message = await _user_message(conversation)
    assert message.content == "Summarize it."
    [document] = message.documents
    assert (document["name"], document["data"], document["pages"]) == ("report.pdf", encoded, 3)
    assert document["texts"] == [
        "Quarterly revenue grew by twelve percent.",
        "",
        "Appendix of figures.",
    ]
    assert "twelve percent" in message.document_text
    assert not await sync_to_async(Attachment.objects.exists)()

    # The transcript shows it: name, pages, the first page's text.
    transcript = (await client.get(f"/api/conversations/{conversation.pk}/messages/")).json()
    user = [m for m in transcript["messages"] if m["role"] == "user"][-1]
    assert user["documents"] == [
        {
            "name": "report.pdf",
            "mime": "application/pdf",
            "size": len(REPORT),
            "pages": 3,
            "preview": "Quarterly revenue grew by twelve percent.",
        }
    ]
    # Search finds the conversation by the document's text.
    found = (await client.get("/api/conversations/search/", {"q": "TWELVE percent"})).json()
    assert [hit["id"] for hit in found["results"]] == [str(conversation.pk)]
    assert "<mark>twelve percent</mark>" in found["results"][0]["snippet"]


async def test_a_docx_sent_over_the_websocket_reaches_a_model_as_its_text(
    alice, alice_key, chat, stub
):
    conversation = await sync_to_async(chat)("anthropic", True)
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    memo = make_docx(["Memo: the launch moves to June.", "Signed, the board."])
    docx_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    attached = (await _upload(client, conversation, "memo.docx", memo, docx_type)).json()
    assert (attached["name"], attached["pages"]) == ("memo.docx", None)

    stub.enqueue(reply("anthropic", ["June."]))
    socket, _ = await connect(alice, conversation)
    await socket.send_json_to({"type": "send", "content": "When?", "attachments": [attached["id"]]})
    frames = await until(socket, "finish")
    await socket.disconnect()

    # A DOCX is read as text, even by a model that reads PDFs.
    blocks = stub.requests[-1].json()["messages"][-1]["content"]
    assert blocks[0]["type"] == "text"
    assert blocks[0]["text"].startswith(f'<document name="memo.docx" type="{docx_type}">')
    assert "the launch moves to June." in blocks[0]["text"]
    assert blocks[-1] == {"type": "text", "text": "When?"}
    # The ``started`` frame's message shows the document; the stored message keeps the file.
    shown = [f for f in frames if f["type"] == "started"][0]["message"]["documents"]
    assert [(d["name"], d["pages"]) for d in shown] == [("memo.docx", None)]
    assert shown[0]["preview"].startswith("Memo: the launch moves to June.")
    message = await _user_message(conversation)
    assert base64.b64decode(message.documents[0]["data"]) == memo
    assert not await sync_to_async(Attachment.objects.exists)()


async def test_a_scanned_page_is_said_to_have_no_text_to_a_model_reading_text(
    alice_key, chat, stub
):
    conversation = await sync_to_async(chat)("openai", False)
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    attached = (await _upload(client, conversation, "scan.pdf", REPORT, "application/pdf")).json()
    stub.enqueue(reply("openai", ["ok"]))
    await _send(client, conversation, "", [attached["id"]])
    parts = stub.requests[-1].json()["messages"][-1]["content"]
    # A message of a document alone is sent (as one of an image alone is).
    assert [part["type"] for part in parts] == ["text"]
    text = parts[0]["text"]
    assert '<document name="scan.pdf" type="application/pdf" pages=3>' in text
    assert "--- page 1 ---\nQuarterly revenue grew by twelve percent." in text
    assert "[page 2 has no extractable text: it may be a scanned image]" in text


async def test_too_large_too_long_or_unknown_files_are_refused_and_nothing_is_stored(
    alice_key, chat, settings
):
    conversation = await sync_to_async(chat)()
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_DOCUMENT_PAGES": 2}
    long = await _upload(client, conversation, "long.pdf", REPORT, "application/pdf")
    assert long.status_code == 400
    assert "3 pages; at most 2" in json.dumps(long.json())

    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_DOCUMENT_BYTES": 100}
    large = await _upload(client, conversation, "large.pdf", REPORT, "application/pdf")
    assert large.status_code == 400
    assert "larger than 100 bytes" in json.dumps(large.json())

    odd = await _upload(client, conversation, "data.bin", b"\x01\x02binary", "application/zip")
    assert odd.status_code == 400
    assert "PDF, DOCX" in json.dumps(odd.json())
    assert not await sync_to_async(Attachment.objects.exists)()


async def test_pending_documents_wait_and_come_back_when_taken_back(alice, alice_key, chat, stub):
    conversation = await sync_to_async(chat)()
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    notes = b"# Notes\nThe plan is sound.\n"
    attached = (await _upload(client, conversation, "notes.md", notes, "text/markdown")).json()
    assert (attached["mime"], attached["preview"]) == (
        "text/markdown",
        "# Notes The plan is sound.",
    )
    # A first answer holds the run (the stub keeps it open): the document's message waits.
    stub.enqueue(reply("openai", ["first"], end=False, hold=True))
    socket, _ = await connect(alice, conversation)
    await socket.send_json_to({"type": "send", "content": "one"})
    await until(socket, "started")
    await socket.send_json_to({"type": "send", "content": "read", "attachments": [attached["id"]]})
    await until(socket, "pending")
    [row] = await sync_to_async(list)(PendingMessage.objects.filter(conversation=conversation))
    assert row.documents[0]["name"] == "notes.md"
    assert base64.b64decode(row.documents[0]["data"]) == notes

    taken = (await client.delete(f"/api/conversations/{conversation.pk}/pending/")).json()
    assert taken["taken"] == ["read"]
    [back] = taken["attachments"]
    assert (back["message"], back["name"], back["mime"]) == (0, "notes.md", "text/markdown")
    stored = await sync_to_async(Attachment.objects.get)(pk=uuid.UUID(back["id"]))
    assert base64.b64decode(stored.data) == notes and stored.texts == [notes.decode()]
    await socket.send_json_to({"type": "abort"})
    await until(socket, "finish")
    await socket.disconnect()


async def test_an_edited_message_keeps_its_documents(alice_key, chat, stub):
    conversation = await sync_to_async(chat)()
    client = AsyncClient(authorization=f"Bearer {alice_key}")
    attached = (await _upload(client, conversation, "r.pdf", REPORT, "application/pdf")).json()
    stub.enqueue(reply("openai", ["A."]), reply("openai", ["B."]))
    await _send(client, conversation, "first try", [attached["id"]])
    first = await _user_message(conversation)

    edited = await client.post(
        f"/api/conversations/{conversation.pk}/messages/{first.message_id}/edit/",
        {"content": "better"},
        content_type="application/json",
    )
    assert edited.status_code == 202, edited.content
    await run_service.wait(edited.json()["id"])

    message = await _user_message(conversation)
    assert message.content == "better"
    assert message.documents == first.documents
    assert "twelve percent" in str(stub.requests[-1].json()["messages"][-1]["content"])
