"""Scope, narrow, ScopeManager and filter_allow_list."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    SCOPE_CATEGORIES,
    Scope,
    ScopeManager,
    create_scope,
    create_scope_manager,
    filter_allow_list,
)

# --- Scope ----------------------------------------------------------------------------------


def test_create_scope_mints_an_id_and_carries_the_four_lists() -> None:
    scope = create_scope(
        name="read-only",
        instructions=["safety"],
        tools=["search"],
        files=["src/a.ts"],
        messages=["m1"],
    )
    other = create_scope(name="read-only")
    assert scope.id and other.id and scope.id != other.id
    assert scope.name == "read-only"
    assert scope.instructions == ("safety",)
    assert scope.tools == ("search",)
    assert scope.files == ("src/a.ts",)
    assert scope.messages == ("m1",)
    assert (other.instructions, other.tools, other.files, other.messages) == (None,) * 4


def test_scope_lists_are_copied_in_so_caller_mutation_cannot_leak() -> None:
    tools = ["search"]
    files = ["a.ts"]
    scope = create_scope(name="s", tools=tools, files=files)
    tools.append("delete")
    files.clear()
    assert scope.tools == ("search",)
    assert scope.files == ("a.ts",)


def test_empty_list_is_distinct_from_none() -> None:
    scope = create_scope(name="s", tools=[])
    assert scope.tools == ()
    assert scope.instructions is None


def test_create_scope_accepts_a_mapping_or_a_name() -> None:
    from_mapping = create_scope({"name": "m", "tools": ["a"], "files": []})
    assert (from_mapping.name, from_mapping.tools, from_mapping.files) == ("m", ("a",), ())
    assert create_scope("plain").name == "plain"
    overridden = create_scope({"name": "m", "tools": ["a"]}, tools=["b"])
    assert overridden.tools == ("b",)


def test_scope_is_immutable() -> None:
    scope = create_scope(name="s")
    with pytest.raises(AttributeError):
        scope.name = "t"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "name"),
        ({"name": ""}, "name"),
        ({"name": "s", "tools": "search"}, "tools"),
        ({"name": "s", "files": [1]}, "files"),
        ({"name": "s", "messages": 3}, "messages"),
    ],
)
def test_create_scope_rejects_bad_fields_naming_the_field(kwargs: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        create_scope(**kwargs)


def test_create_scope_rejects_unknown_mapping_fields() -> None:
    with pytest.raises(TypeError, match="tool"):
        create_scope({"name": "s", "tool": ["x"]})


# --- narrow ---------------------------------------------------------------------------------


def test_narrow_list_and_list_keeps_keys_in_both_in_parent_order() -> None:
    parent = create_scope(name="p", tools=["a", "b", "c"])
    assert parent.narrow({"tools": ["c", "a", "z"]}).tools == ("a", "c")


def test_narrow_none_parent_takes_the_child_list() -> None:
    assert create_scope(name="p").narrow({"tools": ["a"]}).tools == ("a",)


def test_narrow_none_child_keeps_the_parent_list() -> None:
    assert create_scope(name="p", tools=["a"]).narrow({}).tools == ("a",)


def test_narrow_none_and_none_stays_none() -> None:
    assert create_scope(name="p").narrow({"tools": None}).tools is None


def test_narrow_empty_list_on_either_side_allows_none() -> None:
    assert create_scope(name="p", tools=[]).narrow({"tools": ["a"]}).tools == ()
    assert create_scope(name="p", tools=["a"]).narrow({"tools": []}).tools == ()


def test_narrow_never_restores_a_parent_excluded_key() -> None:
    parent = create_scope(name="p", tools=["search"])
    assert parent.narrow({"tools": ["search", "delete"]}).tools == ("search",)


def test_narrow_categories_are_independent_including_files() -> None:
    parent = create_scope(name="p", instructions=["x"], tools=["a", "b"], files=["f1", "f2"])
    child = parent.narrow({"files": ["f2"], "messages": ["m"]})
    assert child.instructions == ("x",)
    assert child.tools == ("a", "b")
    assert child.files == ("f2",)
    assert child.messages == ("m",)


def test_narrow_returns_a_new_scope_keeping_the_name_and_leaving_the_parent() -> None:
    parent = create_scope(name="p", tools=["a", "b"])
    child = parent.narrow({"tools": ["a"]})
    assert child is not parent
    assert child.id != parent.id
    assert child.name == "p"
    assert parent.tools == ("a", "b")


def test_chained_narrows_compose() -> None:
    scope = create_scope(name="p", tools=["a", "b", "c"], files=["x", "y"])
    narrowed = scope.narrow({"tools": ["a", "b"]}).narrow({"tools": ["b", "c"], "files": ["y"]})
    assert narrowed.tools == ("b",)
    assert narrowed.files == ("y",)


def test_narrow_accepts_another_scope_as_configuration() -> None:
    parent = create_scope(name="p", tools=["a", "b"])
    other = create_scope(name="o", tools=["b"], files=[])
    child = parent.narrow(other)
    assert (child.name, child.tools, child.files) == ("p", ("b",), ())


keys = st.text(alphabet="abcdef", min_size=1, max_size=2)
allow_lists = st.none() | st.lists(keys, max_size=6)


@given(parent=allow_lists, child=allow_lists)
def test_narrow_never_widens(parent: list[str] | None, child: list[str] | None) -> None:
    scope = create_scope(name="p", tools=parent)
    narrowed = scope.narrow({"tools": child}).tools
    if parent is None and child is None:
        assert narrowed is None
        return
    assert narrowed is not None
    if parent is not None:
        assert set(narrowed) <= set(parent)
    if child is not None:
        assert set(narrowed) <= set(child)
    if parent is not None and child is not None:
        assert set(narrowed) == set(parent) & set(child)


# --- filter_allow_list ----------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    name: str


def test_filter_none_returns_the_items_unchanged() -> None:
    items = (Item("a"), Item("b"))
    assert filter_allow_list(items, None, lambda i: i.name) is items
    as_list = [Item("a")]
    assert filter_allow_list(as_list, None, lambda i: i.name) is as_list


def test_filter_empty_allow_list_returns_nothing() -> None:
    assert list(filter_allow_list([Item("a")], [], lambda i: i.name)) == []


def test_filter_keeps_only_listed_in_the_items_original_order() -> None:
    items = [Item("a"), Item("b"), Item("c")]
    assert list(filter_allow_list(items, ["c", "a"], lambda i: i.name)) == [Item("a"), Item("c")]


def test_filter_membership_is_by_key_not_identity() -> None:
    items = [Item("a"), Item("a"), Item("b")]
    kept = filter_allow_list(items, ["a"], lambda i: i.name)
    assert list(kept) == [Item("a"), Item("a")]


def test_filter_defaults_to_the_item_as_its_key() -> None:
    assert list(filter_allow_list(["x", "y", "z"], ["z", "x"])) == ["x", "z"]


def test_filter_empty_items_never_throws() -> None:
    assert list(filter_allow_list([], ["a"], lambda i: i.name)) == []
    assert list(filter_allow_list([], [], lambda i: i.name)) == []
    assert list(filter_allow_list([], None, lambda i: i.name)) == []


def test_filter_rejects_a_bare_string_allow_list() -> None:
    with pytest.raises(TypeError, match="allow"):
        filter_allow_list(["s"], "safety")  # type: ignore[arg-type]


@given(items=st.lists(keys, max_size=12), allow=allow_lists)
def test_filter_keeps_order_and_membership(items: list[str], allow: list[str] | None) -> None:
    kept = list(filter_allow_list([Item(k) for k in items], allow, lambda i: i.name))
    expected = [Item(k) for k in items if allow is None or k in allow]
    assert kept == expected


# --- ScopeManager ---------------------------------------------------------------------------


def test_create_mints_and_stores_and_same_names_coexist() -> None:
    scopes = create_scope_manager()
    first = scopes.create({"name": "read-only", "tools": ["search"]})
    second = scopes.create({"name": "read-only"})
    assert first.id != second.id
    assert scopes.count == 2
    assert scopes.scope(first.id) is first
    assert scopes.scope("missing") is None
    assert scopes.scopes() == (first, second)


def test_create_always_mints_a_fresh_id_even_from_a_scope_or_an_id() -> None:
    scopes = ScopeManager()
    template = create_scope(name="t", tools=["a"])
    copy = scopes.create(template)
    given_id = scopes.create({"name": "n", "id": copy.id})
    assert copy.id != template.id
    assert copy.tools == ("a",)
    assert given_id.id != copy.id
    assert scopes.count == 2


def test_create_rejects_bad_input() -> None:
    with pytest.raises(TypeError):
        create_scope_manager().create("name")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tools"):
        create_scope_manager().create({"name": "n", "tools": "x"})


def test_remove_one_and_a_batch_reports_whether_any_was_removed() -> None:
    scopes = create_scope_manager()
    a, b, c = (scopes.create({"name": n}) for n in "abc")
    assert scopes.remove(a.id) is True
    assert scopes.remove(a.id) is False
    assert scopes.remove([b.id, "ghost"]) is True
    assert scopes.remove(["ghost"]) is False
    assert scopes.scopes() == (c,)


def test_clear_empties_and_counts_zero() -> None:
    scopes = create_scope_manager()
    scopes.create({"name": "a"})
    scopes.clear()
    assert scopes.count == 0
    assert scopes.scopes() == ()


def test_events_create_remove_per_removed_id_and_clear_via_the_on_option() -> None:
    events: list[tuple[str, object]] = []
    scopes = create_scope_manager(
        on={
            "create": lambda scope: events.append(("create", scope.id)),
            "remove": lambda scope: events.append(("remove", scope.id)),
            "clear": lambda: events.append(("clear", None)),
        }
    )
    a = scopes.create({"name": "a"})
    b = scopes.create({"name": "b"})
    scopes.remove([a.id, "ghost", b.id])
    scopes.remove("ghost")
    scopes.clear()
    assert events == [
        ("create", a.id),
        ("create", b.id),
        ("remove", a.id),
        ("remove", b.id),
        ("clear", None),
    ]


def test_emitter_listener_sees_the_stored_state_after_the_mutation() -> None:
    scopes = create_scope_manager()
    counts: list[int] = []
    scopes.emitter.on("create", lambda scope: counts.append(scopes.count))
    scopes.create({"name": "a"})
    assert counts == [1]


def test_a_throwing_listener_cannot_corrupt_the_registry_and_reaches_error() -> None:
    errors: list[tuple[BaseException, str]] = []

    def explode(scope: Scope) -> None:
        raise RuntimeError("listener broke")

    scopes = create_scope_manager(
        on={"create": explode}, error=lambda exc, event: errors.append((exc, event))
    )
    created = scopes.create({"name": "a"})
    assert scopes.scope(created.id) is created
    assert scopes.count == 1
    assert len(errors) == 1
    assert str(errors[0][0]) == "listener broke"
    assert errors[0][1] == "create"


def test_a_throwing_error_handler_neither_escapes_nor_recurses() -> None:
    calls: list[str] = []

    def bad_handler(exc: BaseException, event: str) -> None:
        calls.append(event)
        raise RuntimeError("handler broke too")

    def explode(*args: object) -> None:
        raise RuntimeError("listener broke")

    scopes = create_scope_manager(on={"create": explode, "clear": explode}, error=bad_handler)
    created = scopes.create({"name": "a"})
    scopes.clear()
    assert calls == ["create", "clear"]
    assert scopes.scope(created.id) is None
    assert scopes.count == 0


def test_scope_categories_are_the_four_lists() -> None:
    assert SCOPE_CATEGORIES == ("instructions", "tools", "files", "messages")
