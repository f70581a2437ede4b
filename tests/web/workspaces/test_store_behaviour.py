"""One behaviour suite, two stores: the kit's in-memory workspace store and the Django one."""

from __future__ import annotations

import copy
import json

import pytest
from asgiref.sync import async_to_sync
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orkestrel.core import (
    BinaryContent,
    WorkspaceManager,
    WorkspaceStore,
    create_binary_content,
    create_file,
    create_memory_workspace_store,
    create_workspace,
)

from .helpers import GIF, PNG, new_id, project

get = async_to_sync


@pytest.fixture(params=["memory", "django"])
def store(request: pytest.FixtureRequest, db) -> WorkspaceStore:
    # ``db`` for both: pytest-django sets the test database up only for static requests.
    if request.param == "memory":
        return create_memory_workspace_store()
    return request.getfixturevalue("django_store")


def save(store: WorkspaceStore, snapshot) -> None:
    async_to_sync(store.set)(snapshot)


def load(store: WorkspaceStore, id: str):
    return async_to_sync(store.get)(id)


def test_both_stores_satisfy_the_kit_store_protocol(store) -> None:
    assert isinstance(store, WorkspaceStore)


def test_text_and_binary_files_round_trip_in_insertion_order(store) -> None:
    workspace = project()
    snapshot = workspace.snapshot()
    save(store, snapshot)
    got = load(store, workspace.id)
    assert got == snapshot
    assert [file["path"] for file in got["files"]] == ["logo.png", "main.py", "README.md"]
    logo, main, readme = got["files"]
    assert logo["content"] == {"data": PNG, "mime": "image/png"} and logo["state"] == "created"
    assert main["content"] == {"text": "print('hi')\n", "language": "python"}
    assert readme["lines"] == 3 and readme["size"] == len("# Project\n\nNotes.")
    assert json.loads(json.dumps(got)) == got


def test_a_stored_snapshot_is_detached_from_the_callers_copy(store) -> None:
    workspace = project()
    snapshot = workspace.snapshot()
    expected = copy.deepcopy(snapshot)
    save(store, snapshot)
    snapshot["files"][1]["content"]["text"] = "tampered"
    snapshot["files"].clear()
    got = load(store, workspace.id)
    got["files"].clear()
    assert load(store, workspace.id) == expected


def test_set_upserts_edits_moves_and_removals(store) -> None:
    workspace = project()
    save(store, workspace.snapshot())
    workspace.append("main.py", "print('bye')\n")
    workspace.write("docs/guide.md", "guide")
    save(store, workspace.snapshot())
    assert load(store, workspace.id) == workspace.snapshot()
    workspace.move("main.py", "src/main.py")
    workspace.remove("README.md")
    save(store, workspace.snapshot())
    got = load(store, workspace.id)
    assert got == workspace.snapshot()
    assert [file["path"] for file in got["files"]] == ["logo.png", "docs/guide.md", "src/main.py"]
    assert got["files"][2]["state"] == "modified"


def test_a_text_write_over_a_binary_file_retypes_it(store) -> None:
    workspace = project()
    save(store, workspace.snapshot())
    workspace.write("logo.png", "now text")
    save(store, workspace.snapshot())
    logo = load(store, workspace.id)["files"][0]
    assert logo["content"] == {
        "text": "now text",
        "language": workspace.file("logo.png").content.language,
    }
    assert logo["state"] == "modified" and logo["size"] == 8


def test_an_emptied_workspace_stays_stored_with_no_files(store) -> None:
    workspace = project()
    save(store, workspace.snapshot())
    workspace.clear()
    save(store, workspace.snapshot())
    assert load(store, workspace.id) == {"id": workspace.id, "files": []}


def test_delete_drops_it_and_an_absent_id_is_a_no_op(store) -> None:
    workspace = project()
    save(store, workspace.snapshot())
    get(store.delete)(workspace.id)
    assert load(store, workspace.id) is None
    get(store.delete)(workspace.id)
    assert load(store, new_id()) is None


def test_two_ids_coexist(store) -> None:
    a, b = project(), project()
    b.write("main.py", "other")
    save(store, a.snapshot())
    save(store, b.snapshot())
    assert load(store, a.id) == a.snapshot() and load(store, b.id) == b.snapshot()
    get(store.delete)(b.id)
    assert load(store, a.id) == a.snapshot()


@pytest.mark.parametrize(
    "bad",
    [
        {"files": []},
        {"id": 3, "files": []},
        {"id": "x", "files": {}},
        {"id": "x", "files": [{"path": "a", "content": {"text": "a"}, "state": "created"}]},
        {
            "id": "x",
            "files": [
                {
                    "path": "a",
                    "content": {"data": "!!", "mime": "image/png"},
                    "state": "created",
                    "size": 0,
                    "lines": 0,
                }
            ],
        },
    ],
)
def test_a_malformed_snapshot_is_refused_with_type_error(store, bad) -> None:
    with pytest.raises(TypeError, match="workspace snapshot"):
        save(store, bad)


def test_a_fresh_manager_opens_a_saved_workspace_and_keeps_editing(store) -> None:
    writer = WorkspaceManager(store=store)
    workspace = writer.add(
        id=new_id(), seed=[create_file("a.gif", create_binary_content(GIF, "image/gif"))]
    )
    workspace.write("notes.txt", "one\ntwo")
    assert get(writer.save)(workspace.id) is True

    reader = WorkspaceManager(store=store)
    opened = get(reader.open)(workspace.id)
    assert opened is not None and reader.active is opened
    assert opened.snapshot() == workspace.snapshot()
    assert opened.file("a.gif").content.data == GIF
    assert opened.read("notes.txt") == "one\ntwo"
    opened.replace("two", "three")
    assert get(reader.save)(opened.id) is True
    assert load(store, opened.id) == opened.snapshot()
    assert get(WorkspaceManager(store=store).open)(new_id()) is None


_PATHS = st.sampled_from(["a.py", "b.md", "c/d.txt", "e.png", "f.json"])
_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), max_size=20)
_STEP = st.one_of(
    st.tuples(st.just("write"), _PATHS, _TEXT),
    st.tuples(st.just("append"), _PATHS, _TEXT),
    st.tuples(st.just("move"), _PATHS, _PATHS),
    st.tuples(st.just("remove"), _PATHS, st.just("")),
    st.tuples(st.just("replace"), _TEXT.filter(bool), _TEXT),
    st.tuples(st.just("seed"), _PATHS, st.just("")),
    st.tuples(st.just("clear"), st.just(""), st.just("")),
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_STEP, min_size=1, max_size=10))
def test_any_edit_history_saved_after_every_step_reads_back_exactly(store, steps) -> None:
    workspace = create_workspace(id=new_id())
    for kind, first, second in steps:
        existing = workspace.file(first) if kind != "replace" else None
        if kind == "write":
            workspace.write(first, second)
        elif kind == "append" and not (existing and isinstance(existing.content, BinaryContent)):
            workspace.append(first, second)
        elif kind == "move":
            workspace.move(first, second)
        elif kind == "remove":
            workspace.remove(first)
        elif kind == "replace":
            workspace.replace(first, second)
        elif kind == "seed":
            # The only way to seat a binary file: rebuild the workspace around it.
            files = [f for f in workspace.files() if f.path != first]
            image = create_file(first, create_binary_content(PNG, "image/png"), "loaded")
            workspace = create_workspace(id=workspace.id, seed=[*files, image])
        elif kind == "clear":
            workspace.clear()
        save(store, workspace.snapshot())
        assert load(store, workspace.id) == workspace.snapshot()
