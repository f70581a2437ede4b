import base64
import json

import pytest

from orkestrel.core import (
    MemoryWorkspaceStore,
    WorkspaceStore,
    create_binary_content,
    create_file,
    create_memory_workspace_store,
    create_workspace,
    is_workspace_snapshot,
)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nstore").decode()


def snapshot_of(id="project", text="print('hi')"):
    workspace = create_workspace(
        id=id, seed=[create_file("logo.png", create_binary_content(PNG, "image/png"))]
    )
    workspace.write("main.py", text)
    return workspace.snapshot()


def test_memory_store_satisfies_the_store_protocol():
    assert isinstance(create_memory_workspace_store(), WorkspaceStore)
    assert isinstance(create_memory_workspace_store(), MemoryWorkspaceStore)


async def test_set_then_get_round_trips_text_and_binary_files():
    store = create_memory_workspace_store()
    snapshot = snapshot_of()
    await store.set(snapshot)
    stored = await store.get("project")
    assert stored == snapshot
    assert json.loads(json.dumps(stored)) == stored
    assert [file["path"] for file in stored["files"]] == ["logo.png", "main.py"]


async def test_set_keeps_a_detached_copy():
    store = create_memory_workspace_store()
    snapshot = snapshot_of()
    await store.set(snapshot)
    snapshot["files"][1]["content"]["text"] = "tampered"
    snapshot["files"].clear()
    fetched = await store.get("project")
    assert fetched["files"][1]["content"]["text"] == "print('hi')"
    fetched["files"].clear()
    assert len((await store.get("project"))["files"]) == 2


async def test_set_upserts_under_the_snapshots_own_id():
    store = create_memory_workspace_store()
    await store.set(snapshot_of(text="v1"))
    await store.set(snapshot_of(text="v2"))
    assert (await store.get("project"))["files"][1]["content"]["text"] == "v2"


async def test_delete_drops_and_absent_ids_are_harmless():
    store = create_memory_workspace_store()
    await store.set(snapshot_of())
    await store.delete("project")
    assert await store.get("project") is None
    await store.delete("never-stored")
    assert await store.get("never-stored") is None


async def test_two_ids_coexist_independently():
    store = create_memory_workspace_store()
    await store.set(snapshot_of("a", text="A"))
    await store.set(snapshot_of("b", text="B"))
    await store.delete("a")
    assert await store.get("a") is None
    assert (await store.get("b"))["files"][1]["content"]["text"] == "B"


async def test_set_rejects_a_malformed_snapshot():
    store = create_memory_workspace_store()
    with pytest.raises(TypeError, match="snapshot"):
        await store.set({"id": "x", "files": "nope"})


def test_is_workspace_snapshot_accepts_real_revived_and_empty_snapshots():
    snapshot = snapshot_of()
    assert is_workspace_snapshot(snapshot)
    assert is_workspace_snapshot(json.loads(json.dumps(snapshot)))
    assert is_workspace_snapshot(create_workspace(id="empty").snapshot())


GOOD_FILE = snapshot_of()["files"][1]


@pytest.mark.parametrize(
    "value",
    [
        None,
        "snapshot",
        ["project", []],
        {"files": []},
        {"id": 7, "files": []},
        {"id": None, "files": []},
        {"id": "x"},
        {"id": "x", "files": "a.txt"},
        {"id": "x", "files": {"a.txt": GOOD_FILE}},
        {"id": "x", "files": [GOOD_FILE, None]},
        {"id": "x", "files": [{**GOOD_FILE, "path": 1}]},
        {"id": "x", "files": [{**GOOD_FILE, "size": "3"}]},
        {"id": "x", "files": [{**GOOD_FILE, "content": {"text": 1, "language": "py"}}]},
        {"id": "x", "files": [{**GOOD_FILE, "content": {"data": "??", "mime": "image/png"}}]},
        {"id": "x", "files": [{**GOOD_FILE, "content": {"blob": "AAAA"}}]},
    ],
)
def test_is_workspace_snapshot_rejects_malformed_shapes_without_raising(value):
    assert is_workspace_snapshot(value) is False
