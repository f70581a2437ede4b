"""Documents uploaded to a workspace (the chat's file panel, the API's ``PUT``) are stored as
the text the model reads: a PDF's pages, a page without text said to have none."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from conversations.models import Conversation
from workspaces.models import WorkspaceFile

from .files import make_docx, make_pdf

pytestmark = pytest.mark.django_db(transaction=True)


def _files(conversation: Conversation) -> dict[str, str | None]:
    conversation.refresh_from_db()
    rows = WorkspaceFile.objects.filter(workspace=conversation.workspace).order_by("position")
    return {row.path: row.text for row in rows}


def test_a_pdf_uploaded_in_the_chat_is_stored_as_its_text(alice):
    conversation = Conversation.objects.create(owner=alice, title="files")
    browser = Client()
    browser.force_login(alice)
    pdf = make_pdf(["Meeting notes: ship on Friday.", None])

    response = browser.post(
        f"/c/{conversation.pk}/workspace/upload/",
        {"file": SimpleUploadedFile("notes.pdf", pdf, content_type="application/pdf")},
        headers={"accept": "application/json"},
    )

    assert response.status_code in (200, 201), response.content
    text = _files(conversation)["notes.pdf.txt"]
    assert text is not None
    assert text.startswith('<document name="notes.pdf" type="application/pdf" pages=2>')
    assert "ship on Friday." in text and "[page 2 has no extractable text" in text


def test_a_docx_put_over_the_api_is_stored_as_its_text_and_a_bad_one_is_refused(alice, alice_key):
    conversation = Conversation.objects.create(owner=alice, title="files")
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Bearer {alice_key}")
    url = f"/api/conversations/{conversation.pk}/workspace/files/brief.txt"
    docx_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    brief = make_docx(["Brief: three pages at most."])

    response = api.put(
        url,
        {"file": SimpleUploadedFile("brief.docx", brief, content_type=docx_type)},
        format="multipart",
    )

    assert response.status_code == 201, response.json()
    assert "Brief: three pages at most." in (_files(conversation)["brief.txt"] or "")
    broken = b"%PDF-1.4 not really a pdf"
    refused = api.put(
        f"/api/conversations/{conversation.pk}/workspace/files/bad.txt",
        {"file": SimpleUploadedFile("bad.pdf", broken, content_type="application/pdf")},
        format="multipart",
    )
    assert refused.status_code == 400
    assert "could not be read" in str(refused.json())
    assert "bad.txt" not in _files(conversation)
