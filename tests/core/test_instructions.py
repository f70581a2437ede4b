"""Instruction, InstructionManager and the instructions-section format cascade."""

from __future__ import annotations

import pytest

from orkestrel.core import (
    INSTRUCTIONS_SECTION_HEADER,
    ContextFormat,
    ContextSectionFormat,
    Instruction,
    InstructionManager,
    create_instruction,
    create_instruction_manager,
    render_instruction_section,
)

# --- Instruction ----------------------------------------------------------------------------


def test_create_instruction_mints_an_id_and_defaults_priority_and_format() -> None:
    one = create_instruction(name="tone", content="Be terse.")
    two = create_instruction({"name": "tone", "content": "Be terse."})
    assert one.id and two.id and one.id != two.id
    assert (one.name, one.content, one.priority, one.format) == ("tone", "Be terse.", 0, None)


def test_instruction_is_immutable() -> None:
    item = create_instruction(name="a", content="b")
    with pytest.raises(AttributeError):
        item.content = "c"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"content": "x"}, "name"),
        ({"name": "", "content": "x"}, "name"),
        ({"name": "a"}, "content"),
        ({"name": "a", "content": 1}, "content"),
        ({"name": "a", "content": "x", "priority": "high"}, "priority"),
        ({"name": "a", "content": "x", "priority": True}, "priority"),
        ({"name": "a", "content": "x", "format": 3}, "format"),
        ({"name": "a", "content": "x", "extra": 1}, "extra"),
    ],
)
def test_create_instruction_rejects_bad_fields_naming_the_field(fields: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        create_instruction(fields)


# --- InstructionManager registry ------------------------------------------------------------


def test_add_one_returns_the_stored_instruction_and_a_batch_returns_a_list() -> None:
    manager = create_instruction_manager()
    safety = manager.add({"name": "safety", "content": "Refuse unsafe requests.", "priority": 10})
    assert isinstance(safety, Instruction)
    assert manager.instruction("safety") is safety
    batch = manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": "B"}])
    assert [item.name for item in batch] == ["a", "b"]
    assert manager.count == 3
    assert manager.instruction("missing") is None


def test_add_mints_a_new_id_on_every_add_and_overwrites_same_name() -> None:
    manager = create_instruction_manager()
    first = manager.add({"name": "tone", "content": "old"})
    again = manager.add(first)
    second = manager.add({"name": "tone", "content": "new", "id": "caller-id"})
    assert len({first.id, again.id, second.id}) == 3
    assert second.id != "caller-id"
    assert manager.count == 1
    assert manager.instruction("tone") is second
    assert second.content == "new"


def test_add_carries_the_item_format_onto_the_entity() -> None:
    manager = create_instruction_manager()
    raw = manager.add({"name": "raw", "content": "ignored", "format": "<rule>x</rule>"})
    assert raw.format == "<rule>x</rule>"


def test_add_batch_with_a_bad_item_leaves_the_registry_untouched() -> None:
    manager = create_instruction_manager()
    with pytest.raises(TypeError):
        manager.add([{"name": "a", "content": "A"}, {"name": "b"}])
    assert manager.count == 0


def test_instructions_sort_by_descending_priority_stable_for_ties() -> None:
    manager = create_instruction_manager()
    manager.add(
        [
            {"name": "low", "content": "1", "priority": -1},
            {"name": "tie1", "content": "2"},
            {"name": "high", "content": "3", "priority": 10},
            {"name": "tie2", "content": "4"},
            {"name": "mid", "content": "5", "priority": 2.5},
        ]
    )
    assert [i.name for i in manager.instructions()] == ["high", "mid", "tie1", "tie2", "low"]


def test_instructions_reflect_an_overwrite_that_changes_priority() -> None:
    manager = create_instruction_manager()
    manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": "B"}])
    assert [i.name for i in manager.instructions()] == ["a", "b"]
    manager.add({"name": "b", "content": "B", "priority": 5})
    assert [i.name for i in manager.instructions()] == ["b", "a"]


def test_remove_one_and_a_batch_reports_whether_any_was_removed() -> None:
    manager = create_instruction_manager()
    manager.add([{"name": n, "content": n} for n in "abcd"])
    assert manager.remove("a") is True
    assert manager.remove("a") is False
    assert manager.remove(["b", "ghost"]) is True
    assert manager.remove(["ghost"]) is False
    assert [i.name for i in manager.instructions()] == ["c", "d"]


def test_clear_empties_the_registry() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "a", "content": "A"})
    manager.clear()
    assert manager.count == 0
    assert manager.instructions() == ()


def test_built_in_description_and_format() -> None:
    manager = create_instruction_manager()
    safety = manager.add({"name": "safety", "content": "Refuse unsafe requests.", "priority": 10})
    assert manager.description == "## Instructions" == INSTRUCTIONS_SECTION_HEADER
    assert manager.format(safety) == "Refuse unsafe requests."
    assert manager.framing is None


def test_manager_framing_drives_description_and_format_and_accepts_a_mapping() -> None:
    manager = InstructionManager(
        format={"open": "<rules>", "render": lambda one: f"<rule>{one.content}</rule>"}
    )
    item = manager.add({"name": "a", "content": "A"})
    assert manager.framing == ContextSectionFormat(
        "<rules>",
        manager.framing.render,  # type: ignore[union-attr]
        None,
    )
    assert manager.description == "<rules>"
    assert manager.format(item) == "<rule>A</rule>"


@pytest.mark.parametrize(
    ("framing", "message"),
    [
        ({"open": 1}, "open"),
        ({"render": "x"}, "render"),
        ({"close": 2}, "close"),
        ({"opn": "x"}, "opn"),
        ("<rules>", "format"),
    ],
)
def test_manager_rejects_a_bad_format(framing: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        create_instruction_manager(format=framing)  # type: ignore[arg-type]


# --- events and emitter isolation -----------------------------------------------------------


def test_events_add_remove_clear_via_the_on_option() -> None:
    events: list[tuple[str, object]] = []
    manager = create_instruction_manager(
        on={
            "add": lambda item: events.append(("add", item.name)),
            "remove": lambda item: events.append(("remove", item.name)),
            "clear": lambda: events.append(("clear", None)),
        }
    )
    manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": "B"}])
    manager.remove(["a", "ghost"])
    manager.remove("ghost")
    manager.clear()
    assert events == [("add", "a"), ("add", "b"), ("remove", "a"), ("clear", None)]


def test_add_event_fires_after_the_mutation_with_the_stored_instruction() -> None:
    manager = create_instruction_manager()
    seen: list[bool] = []
    manager.emitter.on("add", lambda item: seen.append(manager.instruction(item.name) is item))
    manager.add({"name": "a", "content": "A"})
    assert seen == [True]


def test_a_throwing_listener_cannot_corrupt_the_registry_and_reaches_error() -> None:
    errors: list[tuple[BaseException, str]] = []

    def explode(item: Instruction) -> None:
        raise RuntimeError("listener broke")

    manager = create_instruction_manager(
        on={"add": explode, "remove": explode},
        error=lambda exc, event: errors.append((exc, event)),
    )
    added = manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": "B"}])
    assert [i.name for i in manager.instructions()] == ["a", "b"]
    assert manager.instruction("b") is added[1]
    assert manager.remove("a") is True
    assert manager.count == 1
    assert [(str(exc), event) for exc, event in errors] == [
        ("listener broke", "add"),
        ("listener broke", "add"),
        ("listener broke", "remove"),
    ]


def test_a_throwing_error_handler_neither_escapes_nor_recurses() -> None:
    calls: list[str] = []

    def bad_handler(exc: BaseException, event: str) -> None:
        calls.append(event)
        raise RuntimeError("handler broke too")

    def explode(*args: object) -> None:
        raise RuntimeError("listener broke")

    manager = create_instruction_manager(on={"add": explode, "clear": explode}, error=bad_handler)
    manager.add({"name": "a", "content": "A"})
    manager.clear()
    assert calls == ["add", "clear"]
    assert manager.count == 0


# --- the cascade ----------------------------------------------------------------------------


def xml_rules() -> dict:
    return {
        "open": "<rules>",
        "render": lambda one: f"<rule>{one.content}</rule>",
        "close": "</rules>",
    }


def test_seed_xml_example_renders_byte_for_byte() -> None:
    manager = create_instruction_manager(format=xml_rules())
    manager.add({"name": "tone", "content": "Be terse."})
    manager.add(
        {"name": "raw", "content": "ignored", "format": '<rule priority="high">Escalate.</rule>'}
    )
    assert render_instruction_section(manager) == (
        '<rules>\n\n<rule>Be terse.</rule>\n\n<rule priority="high">Escalate.</rule>\n\n</rules>'
    )


def test_built_in_framing_is_the_header_then_the_content() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "tone", "content": "Be terse.", "priority": 10})
    assert render_instruction_section(manager) == "## Instructions\n\nBe terse."


def test_built_in_framing_joins_items_by_priority() -> None:
    manager = create_instruction_manager()
    manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": "B", "priority": 1}])
    assert render_instruction_section(manager) == "## Instructions\n\nB\n\nA"


def test_empty_manager_renders_nothing_even_with_open_and_close() -> None:
    manager = create_instruction_manager(format=xml_rules())
    assert render_instruction_section(manager) == ""


def test_allow_list_filters_items_and_an_empty_list_renders_nothing() -> None:
    manager = create_instruction_manager()
    manager.add([{"name": "safety", "content": "S"}, {"name": "verbose", "content": "V"}])
    assert render_instruction_section(manager, allow=None) == "## Instructions\n\nS\n\nV"
    assert render_instruction_section(manager, allow=["safety"]) == "## Instructions\n\nS"
    assert render_instruction_section(manager, allow=[]) == ""
    assert render_instruction_section(manager, allow=["ghost"]) == ""


PROVIDER = ContextFormat(
    instructions=ContextSectionFormat(
        open="<provider>", render=lambda one: f"[p] {one.content}", close="</provider>"
    )
)


def test_provider_level_beats_the_built_in() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "a", "content": "A"})
    assert render_instruction_section(manager, PROVIDER) == "<provider>\n\n[p] A\n\n</provider>"


def test_manager_level_beats_the_provider_level() -> None:
    manager = create_instruction_manager(format=xml_rules())
    manager.add({"name": "a", "content": "A"})
    assert render_instruction_section(manager, PROVIDER) == "<rules>\n\n<rule>A</rule>\n\n</rules>"


def test_item_level_beats_manager_and_provider_renders() -> None:
    manager = create_instruction_manager(format=xml_rules())
    manager.add({"name": "a", "content": "A", "format": "ITEM"})
    assert render_instruction_section(manager, PROVIDER) == "<rules>\n\nITEM\n\n</rules>"
    bare = create_instruction_manager()
    bare.add({"name": "a", "content": "A", "format": "ITEM"})
    assert render_instruction_section(bare, PROVIDER) == "<provider>\n\nITEM\n\n</provider>"


def test_open_render_and_close_resolve_independently() -> None:
    only_open = create_instruction_manager(format={"open": "OPEN"})
    only_open.add({"name": "a", "content": "A"})
    assert render_instruction_section(only_open, PROVIDER) == "OPEN\n\n[p] A\n\n</provider>"

    only_render = create_instruction_manager(format={"render": lambda one: one.content.lower()})
    only_render.add({"name": "a", "content": "A"})
    assert render_instruction_section(only_render, PROVIDER) == "<provider>\n\na\n\n</provider>"

    only_close = create_instruction_manager(format={"close": "CLOSE"})
    only_close.add({"name": "a", "content": "A"})
    assert render_instruction_section(only_close, PROVIDER) == "<provider>\n\n[p] A\n\nCLOSE"
    assert render_instruction_section(only_close) == "## Instructions\n\nA\n\nCLOSE"


def test_partial_provider_format_falls_through_to_the_built_in() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "a", "content": "A"})
    close_only = ContextFormat(instructions=ContextSectionFormat(close="END"))
    assert render_instruction_section(manager, close_only) == "## Instructions\n\nA\n\nEND"
    assert render_instruction_section(manager, ContextFormat()) == "## Instructions\n\nA"


def test_there_is_no_built_in_close() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "a", "content": "A"})
    assert not render_instruction_section(manager).endswith("\n\n")


def test_empty_slots_are_dropped() -> None:
    manager = create_instruction_manager(format={"open": "", "close": ""})
    manager.add([{"name": "a", "content": "A"}, {"name": "b", "content": ""}])
    # An empty manager open still beats the provider/built-in open (``??`` semantics), then drops.
    assert render_instruction_section(manager, PROVIDER) == "[p] A\n\n[p] "
    bare = create_instruction_manager()
    bare.add([{"name": "a", "content": "A"}, {"name": "b", "content": ""}])
    assert render_instruction_section(bare) == "## Instructions\n\nA"


def test_a_render_returning_none_falls_through_to_the_next_level() -> None:
    manager = create_instruction_manager(
        format={"render": lambda one: None if one.name == "skip" else f"<m>{one.content}</m>"}
    )
    manager.add([{"name": "skip", "content": "S"}, {"name": "keep", "content": "K"}])
    assert render_instruction_section(manager, PROVIDER) == (
        "<provider>\n\n[p] S\n\n<m>K</m>\n\n</provider>"
    )


def test_provider_format_accepts_the_mapping_form() -> None:
    manager = create_instruction_manager()
    manager.add({"name": "a", "content": "A"})
    provider = {"instructions": {"open": "<p>", "close": "</p>"}}
    assert render_instruction_section(manager, provider) == "<p>\n\nA\n\n</p>"
