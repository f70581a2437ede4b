"""What only the Django workspace store promises: one row per path, minimal writes, constant
queries, owner scoping, strict ids, and the async methods inside an event loop."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from orkestrel.core import create_workspace
from orkestrel.db import chunked, parse_id
from workspaces.models import Workspace, WorkspaceFile
from workspaces.stores import DjangoWorkspaceStore

from .helpers import PNG, new_id, project

pytestmark = pytest.mark.django_db


def writes(queries) -> list[str]:
    return [q["sql"] for q in queries if q["sql"].split()[0] in {"INSERT", "UPDATE", "DELETE"}]


def test_files_land_one_row_per_path_text_or_binary(django_store, user) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    row = Workspace.objects.get(pk=workspace.id)
    assert row.owner == user and row.name == ""
    logo, main, readme = row.files.order_by("position")
    assert (logo.text, logo.data, logo.mime, logo.language) == (None, PNG, "image/png", "")
    assert (main.text, main.data, main.language, main.mime) == ("print('hi')\n", None, "python", "")
    assert (readme.size, readme.lines, readme.state) == (17, 3, "created")
    assert logo.position < main.position < readme.position


def test_an_edit_updates_only_that_row(django_store) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    before = dict(WorkspaceFile.objects.values_list("path", "pk"))
    workspace.append("main.py", "more\n")
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(workspace.snapshot())
    changes = writes(queries.captured_queries)
    assert len(changes) == 2 and all(sql.startswith("UPDATE") for sql in changes)
    assert dict(WorkspaceFile.objects.values_list("path", "pk")) == before
    main = WorkspaceFile.objects.get(path="main.py")
    assert main.text == "print('hi')\nmore\n" and main.state == "modified" and main.lines == 3
    assert WorkspaceFile.objects.get(path="README.md").updated < main.updated


def test_a_move_deletes_the_old_path_and_appends_the_new_one(django_store) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    logo = WorkspaceFile.objects.get(path="logo.png")
    workspace.move("main.py", "src/main.py")
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(workspace.snapshot())
    kinds = sorted(sql.split()[0] for sql in writes(queries.captured_queries))
    assert kinds == ["DELETE", "INSERT", "UPDATE"]
    assert WorkspaceFile.objects.get(path="logo.png").updated == logo.updated
    assert list(WorkspaceFile.objects.order_by("position").values_list("path", flat=True)) == [
        "logo.png",
        "README.md",
        "src/main.py",
    ]


def test_saving_an_unchanged_snapshot_writes_nothing(django_store) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    with CaptureQueriesContext(connection) as queries:
        django_store.set_sync(workspace.snapshot())
    assert writes(queries.captured_queries) == []


def test_an_edit_costs_the_same_queries_with_3_or_300_files(django_store) -> None:
    costs = []
    for count in (3, 300):
        workspace = create_workspace(id=new_id())
        workspace.write({f"src/{index}.py": f"x = {index}\n" for index in range(count)})
        django_store.set_sync(workspace.snapshot())
        workspace.write("src/1.py", "x = 'edited'\n")
        workspace.write("new.py", "")
        workspace.remove("src/0.py")
        with CaptureQueriesContext(connection) as queries:
            django_store.set_sync(workspace.snapshot())
        costs.append(len(queries))
        with CaptureQueriesContext(connection) as read:
            assert django_store.get_sync(workspace.id) == workspace.snapshot()
        assert len(read) == 1
    assert costs[0] == costs[1]


def test_reordered_files_read_back_in_the_new_order(django_store) -> None:
    snapshot = project().snapshot()
    django_store.set_sync(snapshot)
    snapshot["files"].reverse()
    django_store.set_sync(snapshot)
    assert django_store.get_sync(snapshot["id"]) == snapshot


def test_a_snapshot_repeating_a_path_is_refused_and_saves_nothing(django_store) -> None:
    snapshot = project().snapshot()
    snapshot["files"].append(snapshot["files"][1])
    with pytest.raises(ValueError, match="unique paths"):
        django_store.set_sync(snapshot)
    assert not Workspace.objects.exists()


@pytest.mark.parametrize("bad", ["project", "", "6F9619FF-8B86-4011-B42D-00C04FC964FF", None])
def test_ids_other_than_canonical_uuids_are_absent_and_cannot_be_saved(django_store, bad) -> None:
    assert django_store.get_sync(bad) is None
    django_store.delete_sync(bad)
    if isinstance(bad, str):
        with pytest.raises(ValueError, match="canonical UUID"):
            django_store.set_sync({"id": bad, "files": []})


def test_a_store_sees_only_its_owners_workspaces(django_store, other_user) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    theirs = DjangoWorkspaceStore(owner=other_user)
    assert theirs.get_sync(workspace.id) is None
    with pytest.raises(PermissionError):
        theirs.set_sync(workspace.snapshot())
    theirs.delete_sync(workspace.id)
    assert django_store.get_sync(workspace.id) == workspace.snapshot()


def test_an_ownerless_store_reads_every_workspace_but_cannot_create_one(django_store) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    operator = DjangoWorkspaceStore()
    assert operator.get_sync(workspace.id) == workspace.snapshot()
    with pytest.raises(ValueError, match="owner"):
        operator.set_sync(project().snapshot())


def test_delete_cascades_to_the_files(django_store) -> None:
    workspace = project()
    django_store.set_sync(workspace.snapshot())
    django_store.delete_sync(workspace.id)
    assert not WorkspaceFile.objects.exists()


def test_parse_id_accepts_only_canonical_uuid_strings() -> None:
    id = new_id()
    assert str(parse_id(id)) == id
    assert parse_id(id.upper()) is None and parse_id(id.replace("-", "")) is None
    assert parse_id(7) is None and parse_id("nope") is None


def test_chunked_slices_without_losing_items() -> None:
    assert [list(chunk) for chunk in chunked(list(range(5)), 2)] == [[0, 1], [2, 3], [4]]
    assert list(chunked([], 3)) == []


@pytest.mark.django_db(transaction=True)
async def test_the_async_methods_work_from_a_running_event_loop(user) -> None:
    store = DjangoWorkspaceStore(owner=user)
    workspace = project()
    await store.set(workspace.snapshot())
    assert await store.get(workspace.id) == workspace.snapshot()
    await store.delete(workspace.id)
    assert await store.get(workspace.id) is None


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="needs concurrent writers")
def test_concurrent_first_saves_of_one_workspace_both_succeed(user) -> None:
    workspace = project()
    snapshots = []
    for text in ("one", "two"):
        workspace.write("main.py", text)
        snapshots.append(workspace.snapshot())
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def save(snapshot) -> None:
        try:
            barrier.wait()
            DjangoWorkspaceStore(owner=user.pk).set_sync(snapshot)
        except BaseException as error:
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=save, args=(s,)) for s in snapshots]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert DjangoWorkspaceStore().get_sync(workspace.id) in snapshots
