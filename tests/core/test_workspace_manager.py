import base64
import uuid

import pytest

from orkestrel.core import (
    Workspace,
    WorkspaceManager,
    create_binary_content,
    create_file,
    create_memory_workspace_store,
    create_workspace,
    create_workspace_manager,
)

PNG = base64.b64encode(b"GIF89a-manager").decode()


class CountingStore:
    """A real in-memory store that also counts reads, to observe when open hits the store."""

    def __init__(self):
        self.inner = create_memory_workspace_store()
        self.gets = 0

    async def get(self, id):
        self.gets += 1
        return await self.inner.get(id)

    async def set(self, snapshot):
        await self.inner.set(snapshot)

    async def delete(self, id):
        await self.inner.delete(id)


def stored_snapshot(id="saved"):
    workspace = create_workspace(
        id=id, seed=[create_file("anim.gif", create_binary_content(PNG, "image/gif"))]
    )
    workspace.write("notes.md", "# saved")
    return workspace.snapshot()


# --- registry -----------------------------------------------------------------------------


def test_add_mints_a_workspace_with_a_uuid_and_registers_it():
    manager = create_workspace_manager()
    workspace = manager.add()
    assert isinstance(manager, WorkspaceManager) and isinstance(workspace, Workspace)
    assert uuid.UUID(workspace.id)
    assert manager.workspace(workspace.id) is workspace and manager.count == 1


def test_add_takes_a_mapping_or_keywords():
    manager = create_workspace_manager()
    first = manager.add({"id": "a"})
    second = manager.add(id="b")
    assert (first.id, second.id) == ("a", "b")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.add({"id": "a"}, id="b"),
        lambda m: m.add({"name": "a"}),
        lambda m: m.add(colour="red"),
        lambda m: m.add("a"),
    ],
)
def test_add_rejects_bad_input(call):
    with pytest.raises(TypeError):
        call(create_workspace_manager())


def test_workspaces_lists_in_insertion_order_and_lookups_are_lenient():
    manager = create_workspace_manager()
    for id in ("c", "a", "b"):
        manager.add(id=id)
    assert [workspace.id for workspace in manager.workspaces()] == ["c", "a", "b"]
    assert manager.workspace("missing") is None


def test_add_with_an_existing_id_overwrites_it():
    manager = create_workspace_manager()
    first = manager.add(id="a")
    first.write("x.txt", "old")
    second = manager.add(id="a")
    assert manager.count == 1
    assert manager.workspace("a") is second and not second.has("x.txt")


def test_add_seeds_initial_files():
    manager = create_workspace_manager()
    seed = [create_file("anim.gif", create_binary_content(PNG, "image/gif"))]
    workspace = manager.add(id="a", seed=seed)
    assert workspace.files() == tuple(seed)


# --- active pointer -----------------------------------------------------------------------


def test_active_is_none_until_the_first_add_activates():
    manager = create_workspace_manager()
    assert manager.active is None
    first = manager.add()
    manager.add()
    assert manager.active is first


def test_switch_repoints_active_and_returns_the_workspace():
    manager = create_workspace_manager()
    manager.add(id="a")
    b = manager.add(id="b")
    assert manager.switch("b") is b and manager.active is b


def test_switch_to_an_unknown_id_returns_none_and_keeps_active():
    manager = create_workspace_manager()
    a = manager.add(id="a")
    assert manager.switch("ghost") is None
    assert manager.active is a


def test_active_follows_a_readd_of_the_active_id():
    manager = create_workspace_manager()
    manager.add(id="a")
    replacement = manager.add(id="a")
    assert manager.active is replacement


def test_remove_one_or_a_batch_reports_any():
    manager = create_workspace_manager()
    for id in ("a", "b", "c", "d"):
        manager.add(id=id)
    assert manager.remove("b") is True
    assert manager.remove("b") is False
    assert manager.remove(["c", "ghost"]) is True
    assert manager.remove(["ghost"]) is False
    assert [workspace.id for workspace in manager.workspaces()] == ["a", "d"]


def test_removing_the_active_workspace_clears_active():
    manager = create_workspace_manager()
    manager.add(id="a")
    manager.add(id="b")
    manager.remove(["b", "a"])
    assert manager.active is None
    manager.add(id="c")
    assert manager.active.id == "c"


def test_removing_another_workspace_keeps_active():
    manager = create_workspace_manager()
    a = manager.add(id="a")
    manager.add(id="b")
    manager.remove("b")
    assert manager.active is a


def test_clear_empties_the_registry_and_active():
    manager = create_workspace_manager()
    manager.add()
    manager.add()
    manager.clear()
    assert manager.count == 0 and manager.active is None and manager.workspaces() == ()


# --- default listeners --------------------------------------------------------------------


def test_manager_on_and_error_flow_into_created_workspaces():
    writes, errors = [], []

    def broken(_file):
        raise RuntimeError("bug")

    manager = create_workspace_manager(
        on={"write": [writes.append, broken]}, error=lambda error, event: errors.append(event)
    )
    manager.add().write("a.txt", "A")
    assert [file.path for file in writes] == ["a.txt"] and errors == ["write"]


def test_a_per_add_on_and_error_override_the_defaults():
    defaults, own, errors = [], [], []

    def broken(_path):
        raise RuntimeError("bug")

    manager = create_workspace_manager(on={"write": defaults.append}, error=lambda *_: None)
    workspace = manager.add(
        on={"write": own.append, "remove": broken}, error=lambda e, event: errors.append(event)
    )
    workspace.write("a.txt", "A")
    workspace.remove("a.txt")
    assert defaults == [] and len(own) == 1 and errors == ["remove"]


# --- open / save over a real memory store -------------------------------------------------


async def test_open_activates_a_registered_workspace_without_a_store_hit():
    store = CountingStore()
    manager = create_workspace_manager(store=store)
    manager.add(id="a")
    b = manager.add(id="b")
    assert await manager.open("b") is b
    assert manager.active is b and store.gets == 0


async def test_open_hydrates_from_the_store_on_a_registry_miss():
    store = CountingStore()
    await store.set(stored_snapshot())
    manager = create_workspace_manager(store=store)
    workspace = await manager.open("saved")
    assert workspace is not None and store.gets == 1
    assert manager.active is workspace and manager.workspace("saved") is workspace
    assert workspace.read("notes.md") == "# saved"
    assert workspace.file("anim.gif").content == create_binary_content(PNG, "image/gif")
    assert workspace.snapshot() == stored_snapshot()


async def test_open_activates_the_loaded_workspace_in_a_non_empty_registry():
    store = create_memory_workspace_store()
    await store.set(stored_snapshot())
    manager = create_workspace_manager(store=store)
    manager.add(id="existing")
    opened = await manager.open("saved")
    assert manager.active is opened and manager.count == 2


async def test_open_returns_none_on_a_store_miss_or_without_a_store():
    with_store = create_workspace_manager(store=create_memory_workspace_store())
    without_store = create_workspace_manager()
    without_store.add(id="a")
    assert await with_store.open("ghost") is None and with_store.active is None
    assert await without_store.open("ghost") is None
    assert without_store.active.id == "a"


async def test_open_ignores_a_malformed_stored_snapshot():
    class Corrupt(CountingStore):
        async def get(self, id):
            return {"id": id, "files": [{"path": "broken"}]}

    manager = create_workspace_manager(store=Corrupt())
    assert await manager.open("x") is None and manager.count == 0


async def test_save_then_a_fresh_manager_opens_it_back_intact():
    store = create_memory_workspace_store()
    manager = create_workspace_manager(store=store)
    workspace = manager.add(
        id="w", seed=[create_file("anim.gif", create_binary_content(PNG, "image/gif"))]
    )
    workspace.write("a.txt", "A")
    assert await manager.save("w") is True
    reopened = await create_workspace_manager(store=store).open("w")
    assert reopened.files() == workspace.files()


async def test_resave_upserts_the_latest_state():
    store = create_memory_workspace_store()
    manager = create_workspace_manager(store=store)
    workspace = manager.add(id="w")
    workspace.write("a.txt", "v1")
    await manager.save("w")
    workspace.write("a.txt", "v2")
    await manager.save("w")
    reopened = await create_workspace_manager(store=store).open("w")
    assert reopened.read("a.txt") == "v2"


async def test_save_without_a_store_or_for_an_unknown_id_is_false():
    no_store = create_workspace_manager()
    no_store.add(id="a")
    assert await no_store.save("a") is False
    store = create_memory_workspace_store()
    assert await create_workspace_manager(store=store).save("ghost") is False
    assert await store.get("ghost") is None


def test_manager_rejects_a_store_without_the_protocol():
    with pytest.raises(TypeError, match="store"):
        create_workspace_manager(store=object())


def test_a_snapshot_round_trips_through_the_seed_seam():
    source = create_workspace(
        seed=[create_file("anim.gif", create_binary_content(PNG, "image/gif"))]
    )
    source.write("a.txt", "A")
    snapshot = source.snapshot()
    manager = create_workspace_manager()
    rebuilt = manager.add(id=snapshot["id"], seed=[(f["path"], f) for f in snapshot["files"]])
    assert rebuilt.files() == source.files() and rebuilt.id == source.id
