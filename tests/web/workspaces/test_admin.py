"""The operators' admin lists each workspace's files, read-only."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from workspaces.models import Workspace

from .helpers import project

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    admin = get_user_model().objects.create_superuser("root", email="root@example.com")
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def written(django_store):
    workspace = project()
    workspace.write("big.txt", "x" * 5000)
    django_store.set_sync(workspace.snapshot())
    return workspace


def test_the_changelist_counts_files_and_bytes(operator, written) -> None:
    response = operator.get(reverse("admin:workspaces_workspace_changelist"))
    assert response.status_code == 200
    shown = response.context["cl"].result_list[0]
    assert shown.file_total == 4
    assert shown.byte_total == sum(file.size for file in written.files())


def test_the_change_page_lists_the_files_the_store_wrote_read_only(operator, written) -> None:
    url = reverse("admin:workspaces_workspace_change", args=[written.id])
    response = operator.get(url)
    assert response.status_code == 200
    page = response.text
    for file in written.files():
        assert file.path in page
    assert "image/png" in page and "python" in page and "created" in page
    assert "x" * 100 not in page  # contents stay out of the page
    inline = response.context["inline_admin_formsets"][0]
    formset = inline.formset
    assert formset.total_form_count() == 4
    assert [form.instance.path for form in formset.forms] == [f.path for f in written.files()]
    assert not inline.has_add_permission and not inline.has_change_permission
    assert not inline.has_delete_permission


def test_only_the_name_is_editable(operator, written) -> None:
    url = reverse("admin:workspaces_workspace_change", args=[written.id])
    assert list(operator.get(url).context["adminform"].form.fields) == ["name"]
    data = {"name": "Renamed", "files-TOTAL_FORMS": "0", "files-INITIAL_FORMS": "0"}
    assert operator.post(url, data).status_code == 302
    row = Workspace.objects.get(pk=written.id)
    assert row.name == "Renamed" and row.files.count() == 4


def test_adding_and_deleting_workspaces_is_forbidden(operator, written) -> None:
    assert operator.get(reverse("admin:workspaces_workspace_add")).status_code == 403
    delete = reverse("admin:workspaces_workspace_delete", args=[written.id])
    assert operator.post(delete, {"post": "yes"}).status_code == 403
    assert Workspace.objects.filter(pk=written.id).exists()
