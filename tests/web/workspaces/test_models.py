"""Workspace file rows: validation on save, the database backstop, and the kit conversions."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from orkestrel.core import create_binary_content, create_file, create_text_content, file_to_dict
from workspaces.models import Workspace, WorkspaceFile, file_fields

from .helpers import PNG

pytestmark = pytest.mark.django_db


@pytest.fixture
def workspace(user) -> Workspace:
    return Workspace.objects.create(owner=user, name="demo")


def row(workspace: Workspace, **fields) -> WorkspaceFile:
    values = {"path": "a.txt", "position": 0, "text": "hi", "language": "text"} | fields
    return WorkspaceFile(workspace=workspace, **values)


def test_str_names_the_workspace_and_the_file(workspace) -> None:
    assert str(workspace) == "demo"
    assert str(Workspace(owner=workspace.owner)).startswith("Workspace ")
    assert str(row(workspace)) == "a.txt"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"text": None, "data": None}, "text"),
        ({"data": PNG, "mime": "image/png"}, "text"),
        ({"text": None, "data": PNG, "mime": ""}, "mime"),
        ({"text": None, "data": "not base64!", "mime": "image/png"}, "data"),
        ({"language": ""}, "language"),
        ({"path": "bad\x00path"}, "path"),
        ({"state": "gone"}, "state"),
        ({"path": ""}, "path"),
    ],
)
def test_full_clean_names_the_bad_field_and_nothing_is_saved(workspace, fields, field) -> None:
    with pytest.raises(ValidationError) as caught:
        row(workspace, **fields).full_clean()
    assert field in caught.value.message_dict
    assert not WorkspaceFile.objects.exists()


@pytest.mark.parametrize(
    "fields",
    [
        {"text": None, "data": None},
        {"data": PNG, "mime": "image/png"},
        {"text": None, "data": PNG, "mime": "text/html"},
        {"language": ""},
        {"state": "gone"},
        {"path": ""},
    ],
)
def test_the_database_refuses_what_clean_would(workspace, fields) -> None:
    with pytest.raises(IntegrityError), transaction.atomic():
        row(workspace, **fields).save()


def test_a_path_is_unique_within_a_workspace_only(workspace, user) -> None:
    row(workspace).save()
    other = Workspace.objects.create(owner=user)
    row(other).save()
    with pytest.raises(IntegrityError), transaction.atomic():
        row(workspace, position=1).save()


@pytest.mark.parametrize(
    "file",
    [
        create_file("src/app.py", create_text_content("x = 1\ny = 2", "python"), "modified"),
        create_file("empty.txt", create_text_content("")),
        create_file("logo.png", create_binary_content(PNG, "image/png"), "loaded"),
    ],
)
def test_a_kit_file_converts_to_a_valid_row_and_back_unchanged(workspace, file) -> None:
    stored = WorkspaceFile(workspace=workspace, position=0, **file_fields(file))
    stored.full_clean()
    stored.save()
    stored.refresh_from_db()
    assert stored.to_file() == file
    assert stored.to_dict() == file_to_dict(file)
    assert stored.is_binary is (stored.data is not None)
