"""The workspace panel: list, read and upload files of a conversation's workspace."""

from __future__ import annotations

import base64
import struct
import zlib

import pytest
from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from conversations.files import list_files, upload_file
from conversations.models import Conversation
from workspaces.models import Workspace, WorkspaceFile
from workspaces.services import MAX_TEXT_BYTES

pytestmark = pytest.mark.django_db


def png_bytes(width: int = 2, height: int = 1) -> bytes:
    """A real, decodable PNG (8-bit grey)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    raw = b"".join(b"\x00" + b"\x7f" * width for _ in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


@pytest.fixture
def conversation(alice):
    return Conversation.objects.create(owner=alice, title="Files")


def upload(client, conversation, name, data, content_type="application/octet-stream", json=True):
    headers = {"Accept": "application/json"} if json else {}
    return client.post(
        reverse("workspaces:upload", args=[conversation.pk]),
        {"file": SimpleUploadedFile(name, data, content_type=content_type)},
        headers=headers,
    )


def test_uploading_a_text_file_creates_and_links_the_workspace(alice_client, conversation):
    assert conversation.workspace is None
    response = upload(alice_client, conversation, "notes.md", "# Title\nünïcode\n".encode())
    assert response.status_code == 201
    assert response.json()["file"] == {
        "path": "notes.md",
        "kind": "text",
        "language": "markdown",
        "mime": "",
        "size": len("# Title\nünïcode\n".encode()),
        "lines": 3,
        "state": "created",
    }
    conversation.refresh_from_db()
    assert conversation.workspace is not None
    assert conversation.workspace.owner_id == conversation.owner_id
    row = WorkspaceFile.objects.get(workspace=conversation.workspace, path="notes.md")
    assert row.text == "# Title\nünïcode\n" and row.data is None

    listed = alice_client.get(reverse("workspaces:files", args=[conversation.pk])).json()
    assert [f["path"] for f in listed["files"]] == ["notes.md"]
    url = reverse("workspaces:file", args=[conversation.pk])
    read = alice_client.get(url, {"path": "notes.md"})
    assert read.json()["text"] == "# Title\nünïcode\n"


def test_uploading_a_png_stores_its_bytes_and_serves_them_back(alice_client, conversation):
    image = png_bytes()
    response = upload(alice_client, conversation, "pixel.png", image, "image/png")
    assert response.status_code == 201
    assert response.json()["file"]["kind"] == "image"
    conversation.refresh_from_db()
    row = WorkspaceFile.objects.get(workspace=conversation.workspace, path="pixel.png")
    assert row.mime == "image/png" and row.text is None
    assert base64.b64decode(row.data) == image
    served = alice_client.get(
        reverse("workspaces:image", args=[conversation.pk]), {"path": "pixel.png"}
    )
    assert served.status_code == 200
    assert served["Content-Type"] == "image/png" and served["X-Content-Type-Options"] == "nosniff"
    assert served.content == image
    listed = alice_client.get(reverse("workspaces:files", args=[conversation.pk])).json()["files"]
    assert [(f["path"], f["kind"], f["mime"]) for f in listed] == [
        ("pixel.png", "image", "image/png")
    ]


def test_the_image_type_comes_from_the_bytes_not_the_name(alice, conversation):
    gif = b"GIF89a" + b"\x01\x00\x01\x00\x00\x00\x00;"
    info = upload_file(
        user=alice,
        conversation_id=conversation.pk,
        upload=SimpleUploadedFile("picture", gif, content_type="application/octet-stream"),
    )
    assert info["kind"] == "image" and info["mime"] == "image/gif"


def test_uploading_again_replaces_the_file(alice_client, conversation):
    upload(alice_client, conversation, "a.txt", b"one")
    upload(alice_client, conversation, "a.txt", b"two")
    conversation.refresh_from_db()
    rows = WorkspaceFile.objects.filter(workspace=conversation.workspace)
    assert [(row.path, row.text, row.state) for row in rows] == [("a.txt", "two", "modified")]


def test_the_chat_page_lists_the_workspace_files(alice_client, conversation):
    upload(alice_client, conversation, "todo.txt", b"- milk")
    page = alice_client.get(reverse("conversations:chat", args=[conversation.pk])).content.decode()
    assert 'data-path="todo.txt"' in page


@pytest.mark.parametrize(
    ("name", "data", "content_type", "message"),
    [
        ("fake.png", b"just some text", "image/png", "is not a PNG, JPEG, GIF or WebP image"),
        ("fake.txt", b"hello\x00world", "text/plain", "is a binary file"),
        ("latin1.txt", "café".encode("latin-1"), "text/plain", "is not UTF-8 text"),
        ("exe.jpg", b"MZ\x90\x00\x03" + b"\x00" * 20, "image/jpeg", "is not a PNG, JPEG"),
    ],
)
def test_disguised_files_are_rejected_and_nothing_is_stored(
    alice_client, conversation, name, data, content_type, message
):
    response = upload(alice_client, conversation, name, data, content_type)
    assert response.status_code == 400
    assert message in response.json()["error"]
    conversation.refresh_from_db()
    assert conversation.workspace is None
    assert not Workspace.objects.exists() and not WorkspaceFile.objects.exists()


def test_a_text_file_over_one_megabyte_is_rejected(alice_client, conversation):
    response = upload(alice_client, conversation, "big.txt", b"a" * (MAX_TEXT_BYTES + 1))
    assert response.status_code == 413
    assert "too large" in response.json()["error"]
    assert not WorkspaceFile.objects.exists()


def test_an_image_over_the_configured_limit_is_rejected(alice_client, conversation, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_IMAGE_BYTES": 64}
    image = png_bytes(width=200, height=50)
    assert len(image) > 64
    response = upload(alice_client, conversation, "big.png", image, "image/png")
    assert response.status_code == 413
    assert "too large" in response.json()["error"]
    assert not WorkspaceFile.objects.exists()


def test_a_rejected_upload_keeps_the_existing_files(alice_client, conversation):
    upload(alice_client, conversation, "keep.txt", b"keep")
    upload(alice_client, conversation, "keep.txt", b"\xff\xfe bad")
    conversation.refresh_from_db()
    assert WorkspaceFile.objects.get(workspace=conversation.workspace).text == "keep"


def test_another_users_workspace_is_refused(alice, bob, alice_client):
    bobs = Conversation.objects.create(owner=bob)
    upload_file(
        user=bob, conversation_id=bobs.pk, upload=SimpleUploadedFile("secret.txt", b"secret")
    )
    for url, params in (
        (reverse("workspaces:files", args=[bobs.pk]), {}),
        (reverse("workspaces:file", args=[bobs.pk]), {"path": "secret.txt"}),
        (reverse("workspaces:image", args=[bobs.pk]), {"path": "secret.txt"}),
    ):
        assert alice_client.get(url, params).status_code == 404
    response = upload(alice_client, bobs, "evil.txt", b"evil")
    assert response.status_code == 404
    assert list(WorkspaceFile.objects.values_list("path", flat=True)) == ["secret.txt"]


def test_a_conversation_linked_to_someone_elses_workspace_exposes_nothing(alice, bob):
    bobs_workspace = Workspace.objects.create(owner=bob)
    WorkspaceFile.objects.create(
        workspace=bobs_workspace, path="s.txt", position=0, text="s", language="text"
    )
    conversation = Conversation.objects.create(owner=alice, workspace=bobs_workspace)
    from django.core.exceptions import PermissionDenied

    with pytest.raises(PermissionDenied):
        list_files(user=alice, conversation_id=conversation.pk)


def test_reading_a_missing_file_is_404(alice_client, conversation):
    url = reverse("workspaces:file", args=[conversation.pk])
    assert alice_client.get(url, {"path": "nope.txt"}).status_code == 404


def test_a_plain_form_upload_redirects_back_with_a_message(alice_client, conversation):
    response = upload(alice_client, conversation, "plain.txt", b"hi", json=False)
    assert response.status_code == 302
    assert response["Location"] == reverse("conversations:chat", args=[conversation.pk])
    page = alice_client.get(response["Location"]).content.decode()
    assert "Uploaded plain.txt." in page
    bad = upload(alice_client, conversation, "bad.png", b"nope", "image/png", json=False)
    assert bad.status_code == 302
    assert "is not a PNG" in alice_client.get(bad["Location"]).content.decode()


def test_upload_without_a_file_is_a_clear_error(alice_client, conversation):
    response = alice_client.post(
        reverse("workspaces:upload", args=[conversation.pk]), headers={"Accept": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {"error": "Choose a file to upload."}


def test_upload_names_keep_only_the_last_path_segment(alice, conversation):
    info = upload_file(
        user=alice,
        conversation_id=conversation.pk,
        upload=SimpleUploadedFile("../../etc/passwd\x01", b"root"),
    )
    assert info["path"] == "passwd"


def test_upload_checks_csrf_and_accepts_the_header_chat_js_sends(alice, conversation):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(alice)
    url = reverse("workspaces:upload", args=[conversation.pk])
    refused = client.post(url, {"file": SimpleUploadedFile("a.txt", b"a")})
    assert refused.status_code == 403
    page = client.get(reverse("conversations:chat", args=[conversation.pk]))
    token = page.context["csrf_token"]
    accepted = client.post(
        url,
        {"file": SimpleUploadedFile("a.txt", b"a")},
        headers={"Accept": "application/json", "X-CSRFToken": str(token)},
    )
    assert accepted.status_code == 201
    assert [f["path"] for f in list_files(user=alice, conversation_id=conversation.pk)] == ["a.txt"]


def test_an_upload_declared_larger_than_any_limit_is_refused_before_it_is_read(
    alice_client, conversation
):
    big = b"x" * (2 * 1024 * 1024)  # over 1 MB of text and the 1 MB image limit here
    with override_settings(ORKESTREL={**settings.ORKESTREL, "MAX_IMAGE_BYTES": 1024 * 1024}):
        response = upload(alice_client, conversation, "big.txt", big)
    assert response.status_code == 413
    assert "too large" in response.json()["error"]
    assert list_files(user=conversation.owner, conversation_id=conversation.pk) == []
