import asyncio
import base64
import json
import threading
import time
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    ReadResult,
    ReplaceResult,
    SearchMatch,
    Workspace,
    WorkspaceError,
    create_binary_content,
    create_file,
    create_text_content,
    create_workspace,
    range_of,
)
from orkestrel.core.patterns import PatternBounds

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n-fake-image-").decode()


def image(path="logo.png"):
    return create_file(path, create_binary_content(PNG, "image/png"))


def with_image(**files):
    """A workspace seeded with logo.png (binary) plus the given text files."""
    workspace = create_workspace(seed=[image()])
    if files:
        workspace.write({path.replace("_", "."): text for path, text in files.items()})
    return workspace


def recorder(workspace, *events):
    seen = []
    for event in events:
        workspace.emitter.on(event, lambda *args, event=event: seen.append((event, *args)))
    return seen


# --- identity -----------------------------------------------------------------------------


def test_create_workspace_mints_a_uuid_id_when_omitted():
    first, second = create_workspace(), create_workspace()
    assert uuid.UUID(first.id) and first.id != second.id
    assert isinstance(first, Workspace) and first.count == 0


def test_create_workspace_keeps_a_supplied_id():
    assert create_workspace(id="project").id == "project"


@pytest.mark.parametrize(("bad", "error"), [("", ValueError), (5, TypeError)])
def test_workspace_rejects_a_bad_id(bad, error):
    with pytest.raises(error, match="id"):
        Workspace(id=bad)


# --- write / read -------------------------------------------------------------------------


def test_write_then_read_round_trips_the_text():
    workspace = create_workspace()
    workspace.write("src/main.py", "print('hi')\n")
    assert workspace.read("src/main.py") == "print('hi')\n"


def test_first_write_creates_and_later_edits_modify():
    workspace = create_workspace()
    workspace.write("a.txt", "one")
    assert workspace.file("a.txt").state == "created"
    workspace.write("a.txt", "two")
    assert workspace.file("a.txt").state == "modified"


def test_an_edit_replaces_the_file_and_leaves_a_held_file_unchanged():
    workspace = create_workspace()
    workspace.write("a.txt", "one")
    held = workspace.file("a.txt")
    workspace.append("a.txt", "\ntwo")
    assert held.content.text == "one" and (held.size, held.lines) == (3, 1)
    assert workspace.file("a.txt").content.text == "one\ntwo"
    assert (workspace.file("a.txt").size, workspace.file("a.txt").lines) == (7, 2)


def test_whole_write_infers_language_from_the_path():
    workspace = create_workspace()
    workspace.write("src/main.ts", "const x = 1")
    assert workspace.file("src/main.ts").content.language == "typescript"


def test_whole_write_keeps_an_existing_text_files_language():
    seeded = create_file("Makefile", create_text_content("all:", "make"))
    workspace = create_workspace(seed=[seeded])
    workspace.write("Makefile", "build:")
    assert workspace.file("Makefile").content.language == "make"


def test_writing_text_onto_a_binary_path_retypes_it_to_text():
    workspace = with_image()
    workspace.write("logo.png", "now text")
    file = workspace.file("logo.png")
    assert file.content == create_text_content("now text", "text")
    assert file.state == "modified"


def test_batch_write_writes_every_file():
    workspace = create_workspace()
    workspace.write({"a.ts": "const x = 1", "b.ts": "const y = 2"})
    assert workspace.read(["a.ts", "b.ts"]) == {"a.ts": "const x = 1", "b.ts": "const y = 2"}


def test_a_batch_write_with_a_bad_entry_applies_nothing():
    workspace = create_workspace()
    with pytest.raises(TypeError, match="text"):
        workspace.write({"a.txt": "fine", "b.txt": 3})
    assert workspace.count == 0


@pytest.mark.parametrize(
    ("args", "error", "field"),
    [
        (("", "x"), ValueError, "path"),
        (("a\x00b", "x"), ValueError, "path"),
        ((5, "x"), TypeError, "path"),
        (("a.txt", None), TypeError, "text"),
        (("a.txt", b"bytes"), TypeError, "text"),
        (("a.txt", "x", "1:1"), TypeError, "range"),
    ],
)
def test_write_names_the_bad_argument(args, error, field):
    workspace = create_workspace()
    workspace.write("a.txt", "seed")
    with pytest.raises(error, match=field):
        workspace.write(*args)


def test_ranged_write_splices_the_span_and_marks_modified():
    workspace = create_workspace()
    workspace.write("a.ts", "const x = 1")
    span = {"start": {"line": 1, "column": 11}, "end": {"line": 1, "column": 12}}
    workspace.write("a.ts", "0", span)
    assert workspace.read("a.ts") == "const x = 0"
    assert workspace.file("a.ts").state == "modified"
    assert workspace.file("a.ts").content.language == "typescript"


def test_ranged_write_clamps_a_past_the_end_range():
    workspace = create_workspace()
    workspace.write("a.txt", "ab\ncd")
    workspace.write("a.txt", "!", range_of(2, 2, 40, 40))
    assert workspace.read("a.txt") == "ab\nc!"


def test_ranged_write_with_an_empty_span_inserts():
    workspace = create_workspace()
    workspace.write("a.txt", "ac")
    workspace.write("a.txt", "b", range_of(1, 2, 1, 2))
    assert workspace.read("a.txt") == "abc"


@pytest.mark.parametrize("span", [range_of(1, 3, 1, 2), range_of(2, 1, 1, 1), range_of(0, 1, 1, 1)])
def test_ranged_write_with_an_invalid_range_raises_range(span):
    workspace = create_workspace()
    workspace.write("a.txt", "abc\ndef")
    with pytest.raises(WorkspaceError) as caught:
        workspace.write("a.txt", "x", span)
    assert caught.value.code == "RANGE"
    assert workspace.read("a.txt") == "abc\ndef"


def test_ranged_read_returns_the_slice_and_the_clamped_range():
    workspace = create_workspace()
    workspace.write("a.txt", "hello\nworld")
    result = workspace.read("a.txt", range_of(2, 1, 2, 99))
    assert result == ReadResult("world", range_of(2, 1, 2, 6))


def test_ranged_read_of_an_absent_path_is_none():
    assert create_workspace().read("nope.txt", range_of(1, 1, 1, 2)) is None


def test_batch_read_returns_only_present_text_files():
    workspace = with_image(a_txt="A", b_txt="B")
    assert workspace.read(["a.txt", "logo.png", "missing", "b.txt"]) == {"a.txt": "A", "b.txt": "B"}


def test_plain_read_of_binary_or_absent_is_none():
    workspace = with_image()
    assert workspace.read("logo.png") is None
    assert workspace.read("missing.txt") is None


# --- the modality matrix ------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        lambda w: w.read("logo.png", range_of(1, 1, 1, 2)),
        lambda w: w.write("logo.png", "x", range_of(1, 1, 1, 2)),
        lambda w: w.prepend("logo.png", "x"),
        lambda w: w.append("logo.png", "x"),
        lambda w: w.append({"new.txt": "x", "logo.png": "y"}),
    ],
)
def test_text_only_ops_on_a_binary_file_raise_modality(edit):
    workspace = with_image()
    with pytest.raises(WorkspaceError) as caught:
        edit(workspace)
    assert caught.value.code == "MODALITY"
    assert caught.value.context == {"path": "logo.png"}
    assert workspace.file("logo.png") == image()
    assert not workspace.has("new.txt")


def test_ranged_write_to_an_absent_path_raises_modality():
    with pytest.raises(WorkspaceError) as caught:
        create_workspace().write("ghost.txt", "x", range_of(1, 1, 1, 1))
    assert caught.value.code == "MODALITY"


# --- prepend / append ---------------------------------------------------------------------


def test_prepend_and_append_extend_an_existing_file():
    workspace = create_workspace()
    workspace.write("a.txt", "middle")
    workspace.prepend("a.txt", "start ")
    workspace.append("a.txt", " end")
    assert workspace.read("a.txt") == "start middle end"
    assert workspace.file("a.txt").state == "modified"


def test_prepend_and_append_create_an_absent_file():
    workspace = create_workspace()
    workspace.prepend("notes.md", "first line\n")
    workspace.append("log.py", "x = 1")
    assert workspace.read(["notes.md", "log.py"]) == {"notes.md": "first line\n", "log.py": "x = 1"}
    assert workspace.file("notes.md").state == "created"
    assert workspace.file("log.py").content.language == "python"


def test_prepend_and_append_take_a_batch():
    workspace = create_workspace()
    workspace.write({"a.txt": "a", "b.txt": "b"})
    workspace.prepend({"a.txt": ">", "b.txt": "<"})
    workspace.append({"a.txt": "!", "c.txt": "?"})
    assert workspace.read(["a.txt", "b.txt", "c.txt"]) == {
        "a.txt": ">a!",
        "b.txt": "<b",
        "c.txt": "?",
    }


# --- search -------------------------------------------------------------------------------


def test_search_reports_one_based_hits_with_the_full_line():
    workspace = create_workspace()
    workspace.write({"a.txt": "alpha\nbeta alpha", "b.txt": "no match"})
    assert workspace.search("alpha") == (
        SearchMatch("a.txt", 1, 1, 5, "alpha"),
        SearchMatch("a.txt", 2, 6, 5, "beta alpha"),
    )


def test_search_matches_case_by_default_and_ignores_it_when_not_exact():
    workspace = create_workspace()
    workspace.write("a.txt", "Let let LET")
    assert [m.column for m in workspace.search("LET")] == [9]
    assert [m.column for m in workspace.search("let", exact=False)] == [1, 5, 9]


def test_search_treats_the_query_literally_unless_regex():
    workspace = create_workspace()
    workspace.write("a.txt", "a.b axb")
    assert [m.column for m in workspace.search("a.b")] == [1]
    assert [m.column for m in workspace.search("a.b", regex=True)] == [1, 5]
    assert [(m.column, m.length) for m in workspace.search(r"\d+", regex=True)] == []


def test_search_stops_at_the_limit():
    workspace = create_workspace()
    workspace.write({"a.txt": "x x x", "b.txt": "x"})
    assert len(workspace.search("x", limit=2)) == 2
    assert workspace.search("x", limit=0) == ()
    assert len(workspace.search("x")) == 4


def test_search_skips_binary_files():
    workspace = with_image(a_txt="iVBOR")
    assert [m.path for m in workspace.search("iVBOR")] == ["a.txt"]


def test_an_invalid_regex_raises_pattern():
    workspace = create_workspace()
    workspace.write("a.txt", "x")
    for call in (
        lambda: workspace.search("(unclosed", regex=True),
        lambda: workspace.replace("[z-a]", "y", regex=True),
    ):
        with pytest.raises(WorkspaceError) as caught:
            call()
        assert caught.value.code == "PATTERN"
    assert workspace.read("a.txt") == "x"


@pytest.mark.parametrize("limit", [-1, 1.5, True, "3"])
def test_search_rejects_a_bad_limit(limit):
    with pytest.raises(ValueError, match="limit"):
        create_workspace().search("x", limit=limit)


# --- outside patterns, within bounds ------------------------------------------------------

# Exponential backtracking: Python's ``re`` takes about 5 s over SUBJECT, holding the GIL.
CATASTROPHIC = r"(?:a|a)*$"
SUBJECT = "a" * 26 + "!"
QUICK = PatternBounds(timeout=0.1)


def timed_out(call) -> WorkspaceError:
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as caught:
        call()
    # The engine notices its deadline at checkpoints: up to about as late again.
    assert time.monotonic() - started < 1.0
    assert caught.value.code == "PATTERN", caught.value
    return caught.value


def test_a_catastrophic_pattern_times_out_and_replaces_nothing():
    workspace = create_workspace()
    workspace.write("a.txt", SUBJECT)
    error = timed_out(lambda: workspace.search(CATASTROPHIC, regex=True, bounds=QUICK))
    assert error.message.startswith(f"pattern {CATASTROPHIC!r} took longer than 0.1 s")
    assert error.context == {"query": CATASTROPHIC, "bound": "timeout", "timeout": 0.1}
    timed_out(lambda: workspace.replace(CATASTROPHIC, "x", regex=True, bounds=QUICK))
    assert workspace.read("a.txt") == SUBJECT
    assert workspace.file("a.txt").state == "created"


def test_by_default_a_pattern_has_about_a_second():
    workspace = create_workspace()
    workspace.write("a.txt", SUBJECT)
    started = time.monotonic()
    with pytest.raises(WorkspaceError) as caught:
        workspace.replace(CATASTROPHIC, "x", regex=True)
    assert caught.value.code == "PATTERN"
    # Unbounded, the pattern runs for half a minute and more; the engine checks its deadline
    # (wall clock) at checkpoints, which a machine busy with other work stretches: a loose top.
    assert 1.0 <= time.monotonic() - started < 10.0
    assert workspace.read("a.txt") == SUBJECT


def test_the_deadline_is_the_whole_searchs_not_each_lines():
    # Each line takes about 0.1 s, well within the bound; the forty of them do not.
    workspace = create_workspace()
    workspace.write("a.txt", "\n".join(["a" * 18 + "!"] * 40))
    timed_out(lambda: workspace.search(CATASTROPHIC, regex=True, bounds=PatternBounds(timeout=0.3)))


def test_a_pattern_longer_than_its_bound_is_refused_before_compiling():
    workspace = create_workspace()
    workspace.write("a.txt", "abcdef")
    with pytest.raises(WorkspaceError) as caught:
        workspace.search("abcdef", bounds=PatternBounds(pattern=5))
    assert caught.value.code == "PATTERN"
    assert caught.value.message == "pattern of 6 characters is longer than the 5 allowed"
    assert workspace.search("abcde", bounds=PatternBounds(pattern=5))[0].length == 5


def test_more_text_than_the_bound_is_refused_before_it_is_scanned():
    workspace = create_workspace()
    workspace.write({"a.txt": "x" * 6, "b.txt": "x" * 6})
    bounds = PatternBounds(subject=10)
    with pytest.raises(WorkspaceError) as caught:
        workspace.replace("x", "y", bounds=bounds)
    assert caught.value.code == "PATTERN"
    assert "would scan more than 10 characters" in caught.value.message
    assert workspace.read(["a.txt", "b.txt"]) == {"a.txt": "x" * 6, "b.txt": "x" * 6}
    assert workspace.replace("x", "y", paths=["a.txt"], bounds=bounds).replaced == 6


async def longest_stall(task: asyncio.Task) -> float:
    """The longest the event loop went without running this coroutine while ``task`` ran."""
    longest, last = 0.0, time.monotonic()
    while not task.done():
        await asyncio.sleep(0.005)
        now = time.monotonic()
        longest, last = max(longest, now - last), now
    return longest


async def test_a_search_in_a_thread_keeps_the_loop_serving_until_it_times_out():
    workspace = create_workspace()
    workspace.write("a.txt", SUBJECT)
    search = asyncio.create_task(workspace.search_in_thread(CATASTROPHIC, regex=True))
    # Before, the loop stood still for the whole match (about 5 s); room for a loaded CI box.
    assert await longest_stall(search) < 0.5
    with pytest.raises(WorkspaceError) as caught:
        await search
    assert caught.value.code == "PATTERN"


async def test_a_replace_in_a_thread_keeps_the_loop_serving_and_changes_nothing_on_timeout():
    workspace = create_workspace()
    workspace.write("a.txt", SUBJECT)
    replace = asyncio.create_task(workspace.replace_in_thread(CATASTROPHIC, "x", regex=True))
    assert await longest_stall(replace) < 0.5  # as above
    with pytest.raises(WorkspaceError) as caught:
        await replace
    assert caught.value.code == "PATTERN"
    assert workspace.read("a.txt") == SUBJECT


async def test_in_a_thread_search_and_replace_answer_as_in_place_and_edit_on_the_callers():
    workspace = create_workspace()
    workspace.write({"a.txt": "A a\na", "b.txt": "a", "c.txt": "b"})
    found = await workspace.search_in_thread("^a", regex=True, exact=False, paths=["a.txt"])
    assert found == workspace.search("^a", regex=True, exact=False, paths=["a.txt"])
    writers: list[int] = []
    workspace.emitter.on("write", lambda _file: writers.append(threading.get_ident()))
    tally = await workspace.replace_in_thread("a", "z", limit=3)
    assert tally == ReplaceResult("a", 3, 2)
    assert workspace.read(["a.txt", "b.txt"]) == {"a.txt": "A z\nz", "b.txt": "z"}
    # Worked out on a worker thread, written (and announced) on this one.
    assert writers == [threading.get_ident()] * 2


# --- replace ------------------------------------------------------------------------------


def test_replace_tallies_occurrences_and_files():
    workspace = create_workspace()
    workspace.write({"a.ts": "const x = 1", "b.ts": "const y = 2", "c.ts": "let z"})
    assert workspace.replace("const", "let") == ReplaceResult("const", 2, 2)
    assert workspace.read(["a.ts", "b.ts"]) == {"a.ts": "let x = 1", "b.ts": "let y = 2"}
    assert workspace.file("a.ts").state == "modified"


def test_replace_emits_one_write_per_changed_file():
    workspace = create_workspace()
    workspace.write({"a.txt": "x x", "b.txt": "y", "c.txt": "x"})
    seen = recorder(workspace, "write")
    workspace.replace("x", "z")
    assert [(event, file.path, file.content.text) for event, file in seen] == [
        ("write", "a.txt", "z z"),
        ("write", "c.txt", "z"),
    ]


def test_replace_honours_limit_exact_and_regex():
    workspace = create_workspace()
    workspace.write({"a.txt": "A a a", "b.txt": "a"})
    assert workspace.replace("a", "b", exact=True, limit=2) == ReplaceResult("a", 2, 1)
    assert workspace.read(["a.txt", "b.txt"]) == {"a.txt": "A b b", "b.txt": "a"}
    assert workspace.replace("^[ab]", "_", regex=True, exact=False) == ReplaceResult("^[ab]", 2, 2)
    assert workspace.read(["a.txt", "b.txt"]) == {"a.txt": "_ b b", "b.txt": "_"}


def test_replace_inserts_the_replacement_literally():
    workspace = create_workspace()
    workspace.write("a.txt", "key=value")
    workspace.replace(r"(\w+)=(\w+)", r"\2=\1", regex=True)
    assert workspace.read("a.txt") == r"\2=\1"


def test_replace_skips_binary_files():
    workspace = with_image()
    assert workspace.replace("i", "x") == ReplaceResult("i", 0, 0)
    assert workspace.file("logo.png") == image()


# --- move ---------------------------------------------------------------------------------


def test_move_rekeys_a_file_as_modified():
    workspace = create_workspace()
    workspace.write("b.ts", "const y = 2")
    assert workspace.move("b.ts", "c.ts") is True
    assert not workspace.has("b.ts")
    moved = workspace.file("c.ts")
    assert (moved.path, moved.state, moved.content.text) == ("c.ts", "modified", "const y = 2")


def test_move_overwrites_an_occupied_target():
    workspace = create_workspace()
    workspace.write({"a.txt": "A", "b.txt": "B"})
    assert workspace.move("a.txt", "b.txt") is True
    assert workspace.count == 1 and workspace.read("b.txt") == "A"


def test_move_of_an_absent_path_is_false():
    workspace = create_workspace()
    assert workspace.move("ghost.txt", "x.txt") is False
    assert workspace.count == 0


def test_move_takes_a_batch_of_pairs_or_a_dict():
    workspace = create_workspace()
    workspace.write({"a": "1", "b": "2", "c": "3"})
    assert workspace.move([("a", "x"), ("ghost", "y")]) is True
    assert workspace.move({"b": "y", "c": "z"}) is True
    assert workspace.move({"ghost": "w"}) is False
    assert [file.path for file in workspace.files()] == ["x", "y", "z"]


def test_move_keeps_a_binary_file_binary():
    workspace = with_image()
    workspace.move("logo.png", "img/logo.png")
    assert workspace.file("img/logo.png").content == image().content


def test_move_onto_its_own_path_changes_nothing():
    workspace = create_workspace()
    workspace.write("a.txt", "A")
    seen = recorder(workspace, "move")
    assert workspace.move("a.txt", "a.txt") is True
    assert workspace.file("a.txt").state == "created" and seen == []


# --- has / remove / clear / count / order -------------------------------------------------


def test_has_checks_one_path_or_any_of_a_list():
    workspace = create_workspace()
    workspace.write("a.txt", "A")
    assert workspace.has("a.txt") and not workspace.has("b.txt")
    assert workspace.has(["b.txt", "a.txt"]) and not workspace.has(["b.txt", "c.txt"])
    assert not workspace.has([])


def test_remove_path_drops_one_file():
    workspace = create_workspace()
    workspace.write({"a.txt": "A", "b.txt": "B"})
    assert workspace.remove("a.txt") is True
    assert workspace.remove("a.txt") is False
    assert [file.path for file in workspace.files()] == ["b.txt"]


def test_remove_paths_drops_a_batch_and_reports_any():
    workspace = create_workspace()
    workspace.write({"a.txt": "A", "b.txt": "B", "c.txt": "C"})
    assert workspace.remove(["a.txt", "ghost", "c.txt"]) is True
    assert workspace.remove(["ghost", "nope"]) is False
    assert workspace.count == 1


def test_remove_without_argument_empties_like_clear():
    workspace = create_workspace()
    workspace.write({"a.txt": "A", "b.txt": "B"})
    seen = recorder(workspace, "clear", "remove")
    assert workspace.remove() is None
    assert workspace.count == 0 and seen == [("clear",)]
    workspace.write("c.txt", "C")
    workspace.clear()
    assert workspace.count == 0 and seen == [("clear",), ("clear",)]


def test_count_and_insertion_order_follow_the_edits():
    workspace = create_workspace()
    workspace.write({"b.txt": "B", "a.txt": "A"})
    workspace.write("c.txt", "C")
    workspace.write("b.txt", "B2")
    assert workspace.count == 3
    assert [file.path for file in workspace.files()] == ["b.txt", "a.txt", "c.txt"]
    assert isinstance(workspace.files(), tuple)


# --- events -------------------------------------------------------------------------------


def test_events_carry_the_file_path_and_move_payloads():
    workspace = create_workspace()
    seen = recorder(workspace, "write", "remove", "move", "clear")
    workspace.write("a.txt", "A")
    workspace.move("a.txt", "b.txt")
    workspace.remove("b.txt")
    workspace.remove("b.txt")
    workspace.clear()
    assert [entry[0] for entry in seen] == ["write", "move", "remove", "clear"]
    assert seen[0][1].path == "a.txt" and seen[0][1].content.text == "A"
    assert seen[1][1] == {"from": "a.txt", "to": "b.txt"}
    assert seen[2][1] == "b.txt"


def test_events_fire_after_the_mutation_is_visible():
    workspace = create_workspace()
    observed = []
    workspace.emitter.on("write", lambda file: observed.append(workspace.file(file.path) is file))
    workspace.emitter.on("remove", lambda path: observed.append(not workspace.has(path)))
    workspace.emitter.on("move", lambda event: observed.append(workspace.has(event["to"])))
    workspace.write("a.txt", "A")
    workspace.move("a.txt", "b.txt")
    workspace.remove("b.txt")
    assert observed == [True, True, True]


def test_a_raising_listener_is_isolated_to_the_error_handler():
    errors = []

    def broken(_file):
        raise RuntimeError("observer bug")

    workspace = create_workspace(
        on={"write": broken}, error=lambda error, event: errors.append((str(error), event))
    )
    workspace.write("a.txt", "A")
    assert workspace.read("a.txt") == "A"
    assert errors == [("observer bug", "write")]


def test_on_option_wires_listeners_and_unsubscribe_stops_them():
    seen = []
    workspace = create_workspace(on={"clear": lambda: seen.append("clear")})
    unsubscribe = workspace.emitter.on("clear", lambda: seen.append("second"))
    workspace.clear()
    unsubscribe()
    workspace.clear()
    assert seen == ["clear", "second", "clear"]


# --- seed / snapshot ----------------------------------------------------------------------


def test_seed_places_binary_and_text_files_silently():
    seen = []
    text = create_file("a.txt", create_text_content("A"), "loaded")
    workspace = create_workspace(seed=[("logo.png", image()), text], on={"write": seen.append})
    assert workspace.files() == (image(), text)
    assert seen == []


def test_seed_accepts_snapshot_file_dicts():
    source = with_image(a_txt="A")
    copy = create_workspace(seed=source.snapshot()["files"])
    assert copy.files() == source.files()


def test_seed_rejects_what_is_not_a_file():
    with pytest.raises(TypeError, match="files"):
        create_workspace(seed=[42])


def test_snapshot_is_plain_json_with_id_and_files():
    workspace = with_image(a_txt="A\nB")
    snapshot = workspace.snapshot()
    assert json.loads(json.dumps(snapshot)) == snapshot
    assert snapshot["id"] == workspace.id
    assert [file["path"] for file in snapshot["files"]] == ["logo.png", "a.txt"]
    assert snapshot["files"][1] == {
        "path": "a.txt",
        "content": {"text": "A\nB", "language": "text"},
        "state": "created",
        "size": 3,
        "lines": 2,
    }


paths = st.text(alphabet="abc/._-", min_size=1, max_size=8)


@given(
    st.dictionaries(paths, st.text(max_size=30), max_size=6),
    st.lists(st.binary(max_size=20), max_size=2),
)
def test_a_snapshot_json_round_trip_rebuilds_an_equal_workspace(texts, blobs):
    seed = [
        create_file(
            f"blob{index}.gif", create_binary_content(base64.b64encode(blob).decode(), "image/gif")
        )
        for index, blob in enumerate(blobs)
    ]
    workspace = create_workspace(seed=seed)
    workspace.write(texts)
    revived = json.loads(json.dumps(workspace.snapshot()))
    rebuilt = create_workspace(id=revived["id"], seed=revived["files"])
    assert rebuilt.files() == workspace.files()
    assert rebuilt.snapshot() == workspace.snapshot()
