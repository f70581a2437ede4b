"""The ``Workspace``: a mutable, path-keyed working set of immutable ``File``s.

Every edit mints a replacement ``File`` (``state`` ``"created"`` for a new path, ``"modified"``
for an existing one) and swaps it in, so a ``File`` already held keeps its old value. Each verb
batches by the shape of its argument: a path edits one file, a ``dict`` / list edits a batch.
Text-only edits aimed at a binary file raise ``WorkspaceError("MODALITY")``; plain reads skip
binary files instead. Events (``write`` / ``remove`` / ``move`` / ``clear``) are emitted strictly
after each mutation, and a raising listener never disturbs the edit.

``search`` and ``replace`` take outside patterns (a user's, a model's): they match within
``PatternBounds`` (``patterns``), and ``search_in_thread`` / ``replace_in_thread`` do the
matching on a worker thread, so that a caller on the event loop keeps it serving.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal, TypedDict, overload

from .emitter import Emitter, ErrorHandler, Listener
from .errors import WorkspaceError
from .files import (
    File,
    FilesInput,
    FileState,
    TextContent,
    check_path,
    create_file,
    file_to_dict,
    to_files,
)
from .language import infer_language
from .messages import mint_id
from .patterns import DEFAULT_PATTERN_BOUNDS, BoundedPattern, PatternBounds, compile_pattern
from .ranges import (
    Range,
    RangeInput,
    clamp_range,
    is_valid_range,
    slice_range,
    splice_range,
    to_range,
)
from .workspace_store import WorkspaceSnapshot

__all__ = [
    "MoveEvent",
    "ReadResult",
    "ReplaceResult",
    "SearchMatch",
    "Workspace",
    "WorkspaceEvent",
    "WorkspaceListeners",
    "WorkspaceSeed",
    "create_workspace",
]

WorkspaceEvent = Literal["write", "remove", "move", "clear"]
WorkspaceListeners = Mapping[WorkspaceEvent, Listener | Iterable[Listener]]
# Seeding is the only way a binary file enters a workspace (the edit surface mints text).
WorkspaceSeed = FilesInput
MoveEvent = TypedDict("MoveEvent", {"from": str, "to": str})


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A ranged read: the sliced text and the clamped range actually applied."""

    content: str
    range: Range


@dataclass(frozen=True, slots=True)
class SearchMatch:
    """One ``search`` hit: 1-based ``line`` / ``column``, match ``length``, the full line."""

    path: str
    line: int
    column: int
    length: int
    content: str


@dataclass(frozen=True, slots=True)
class ReplaceResult:
    """The ``replace`` tally: occurrences ``replaced`` across ``files`` changed files."""

    query: str
    replaced: int
    files: int


def _check_text(text: object, name: str = "text") -> str:
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a string, not {type(text).__name__}")
    return text


def _paths(value: object) -> list[str]:
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Iterable):
        raise TypeError(f"paths must be a path or a list of paths, not {type(value).__name__}")
    paths = list(value)
    for path in paths:
        if not isinstance(path, str):
            raise TypeError(f"paths must be strings, not {type(path).__name__}")
    return paths


def _edits(value: object) -> dict[str, str]:
    # Validate a whole {path: text} batch before applying any of it.
    if not isinstance(value, Mapping):
        raise TypeError(f"a batch must be a dict of path to text, not {type(value).__name__}")
    return {
        check_path(path): _check_text(text, f"text for {path!r}") for path, text in value.items()
    }


def _compile(query: object, regex: bool, exact: bool, bounds: PatternBounds) -> BoundedPattern:
    # Literal unless regex; case-sensitive unless ``exact`` is false.
    return compile_pattern(_check_text(query, "query"), regex=regex, exact=exact, bounds=bounds)


def _scope(paths: Collection[str] | None) -> frozenset[str] | None:
    # A copy: the caller's collection may change while a worker thread reads it.
    return frozenset(paths) if paths is not None else None


def _text_of(file: File | None) -> str | None:
    return file.content.text if file is not None and isinstance(file.content, TextContent) else None


def _modality(message: str, path: str) -> WorkspaceError:
    return WorkspaceError("MODALITY", message, context={"path": path})


def _limit(limit: object) -> int | None:
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be a non-negative int or None, not {limit!r}")
    return limit


def _find(
    files: Iterable[File], pattern: BoundedPattern, cap: int | None, paths: frozenset[str] | None
) -> tuple[SearchMatch, ...]:
    """Every match of ``pattern`` in the text files' lines (at most ``cap``); a pure scan."""
    matches: list[SearchMatch] = []
    if cap == 0:
        return ()
    for file in files:
        if paths is not None and file.path not in paths:
            continue
        text = _text_of(file)
        for number, line in enumerate(text.split("\n") if text is not None else (), start=1):
            for hit in pattern.finditer(line):
                length = hit.end() - hit.start()
                matches.append(SearchMatch(file.path, number, hit.start() + 1, length, line))
                if cap is not None and len(matches) >= cap:
                    return tuple(matches)
    return tuple(matches)


@dataclass(frozen=True, slots=True)
class _Replacing:
    """A replace worked out, not yet applied: each changed file's new text, and the tally."""

    texts: dict[str, str]
    replaced: int


def _plan(
    files: Iterable[File],
    pattern: BoundedPattern,
    replacement: str,
    cap: int | None,
    paths: frozenset[str] | None,
) -> _Replacing:
    """The texts ``replace`` would write, worked out from ``files`` alone (a pure scan)."""
    texts: dict[str, str] = {}
    replaced = 0
    for file in files:
        if cap is not None and replaced >= cap:
            break
        if paths is not None and file.path not in paths:
            continue
        text = _text_of(file)
        if text is None:
            continue
        # The replacement is inserted verbatim (no backreference expansion).
        text, count = pattern.subn(replacement, text, 0 if cap is None else cap - replaced)
        if count:
            replaced += count
            texts[file.path] = text
    return _Replacing(texts, replaced)


class Workspace:
    """The in-memory edit surface over a path-keyed set of immutable ``File``s.

    Args:
        id: The workspace's identity (its key in a ``WorkspaceManager``); minted when omitted.
        on: Initial listeners, ``{"write": fn, ...}``; see ``WorkspaceEvent``.
        error: Receives ``(error, event)`` when a listener raises.
        seed: Initial files, placed silently; the only way to seat a binary file.
    """

    __slots__ = ("_emitter", "_files", "_id")

    def __init__(
        self,
        id: str | None = None,
        on: WorkspaceListeners | None = None,
        error: ErrorHandler | None = None,
        seed: WorkspaceSeed | None = None,
    ) -> None:
        if id is not None and not isinstance(id, str):
            raise TypeError(f"id must be a string, not {type(id).__name__}")
        if id == "":
            raise ValueError("id must be a non-empty string")
        self._id = id if id is not None else mint_id()
        self._emitter = Emitter(on=on, error=error)
        self._files: dict[str, File] = {}
        for file in to_files(seed) if seed is not None else ():
            self._files[file.path] = file

    def __repr__(self) -> str:
        return f"Workspace(id={self._id!r}, count={len(self._files)})"

    @property
    def id(self) -> str:
        return self._id

    @property
    def emitter(self) -> Emitter[WorkspaceEvent]:
        """The workspace's events: ``write`` (File), ``remove`` (path), ``move``, ``clear``."""
        return self._emitter

    @property
    def count(self) -> int:
        """How many files the workspace holds."""
        return len(self._files)

    def file(self, path: str) -> File | None:
        """The file at ``path``, or ``None``."""
        return self._files.get(_check_text(path, "path"))

    def files(self) -> tuple[File, ...]:
        """Every file, in insertion order."""
        return tuple(self._files.values())

    # A ``str`` is also an ``Iterable[str]``; the single-path overload comes first and wins.
    @overload
    def read(self, path: str) -> str | None: ...  # type: ignore[overload-overlap]
    @overload
    def read(self, path: str, range: RangeInput) -> ReadResult | None: ...
    @overload
    def read(self, path: Iterable[str]) -> dict[str, str]: ...
    def read(
        self, path: str | Iterable[str], range: RangeInput | None = None
    ) -> str | ReadResult | dict[str, str] | None:
        """A text file's text, a clamped span of it, or a ``{path: text}`` batch.

        A plain read of a binary or absent path is ``None`` (a batch omits it); a ranged read
        of a binary file raises ``WorkspaceError("MODALITY")``.
        """
        if not isinstance(path, str):
            if range is not None:
                raise TypeError("range applies to a single path, not a batch")
            found = ((one, _text_of(self._files.get(one))) for one in _paths(path))
            return {one: text for one, text in found if text is not None}
        file = self._files.get(path)
        if range is None:
            return _text_of(file)
        span = to_range(range)
        if file is None:
            return None
        text = _text_of(file)
        if text is None:
            raise _modality(f"cannot read a range of binary file {path!r}", path)
        return ReadResult(slice_range(text, span), clamp_range(text, span))

    def has(self, path: str | Iterable[str]) -> bool:
        """Whether ``path`` is present, or whether any path of a list is."""
        if isinstance(path, str):
            return path in self._files
        return any(one in self._files for one in _paths(path))

    def search(
        self,
        query: str,
        regex: bool = False,
        exact: bool = True,
        limit: int | None = None,
        paths: Collection[str] | None = None,
        bounds: PatternBounds = DEFAULT_PATTERN_BOUNDS,
    ) -> tuple[SearchMatch, ...]:
        """Scan every text file's lines for ``query``; binary files are skipped.

        Args:
            query: Literal text, or a Python regular expression when ``regex``.
            regex: Treat ``query`` as a pattern (an invalid one raises ``PATTERN``).
            exact: Match case exactly (the seed's default); ``False`` ignores case.
            limit: Stop after this many matches.
            paths: Only these files (``None``: every file; a scope's ``files`` list).
            bounds: The time and sizes the search may take; past them it raises
                ``PATTERN`` (its context's ``bound`` says which: ``timeout`` or ``subject``).
        """
        pattern, cap = _compile(query, regex, exact, bounds), _limit(limit)
        return _find(self.files(), pattern, cap, _scope(paths))

    async def search_in_thread(
        self,
        query: str,
        regex: bool = False,
        exact: bool = True,
        limit: int | None = None,
        paths: Collection[str] | None = None,
        bounds: PatternBounds = DEFAULT_PATTERN_BOUNDS,
    ) -> tuple[SearchMatch, ...]:
        """``search``, compiling and matching on a worker thread (the loop keeps serving)."""
        files, cap, scope = self.files(), _limit(limit), _scope(paths)

        def scan() -> tuple[SearchMatch, ...]:
            return _find(files, _compile(query, regex, exact, bounds), cap, scope)

        return await asyncio.to_thread(scan)

    def replace(
        self,
        query: str,
        replacement: str,
        regex: bool = False,
        exact: bool = True,
        limit: int | None = None,
        paths: Collection[str] | None = None,
        bounds: PatternBounds = DEFAULT_PATTERN_BOUNDS,
    ) -> ReplaceResult:
        """Replace ``query`` with the literal ``replacement`` across every text file (or only
        ``paths``).

        Matching follows ``search`` (``bounds`` too); each changed file is rewritten (emitting
        ``write``) once every match is found, so a pattern that times out changes nothing.
        """
        pattern, cap = _compile(query, regex, exact, bounds), _limit(limit)
        replacement = _check_text(replacement, "replacement")
        return self._apply(query, _plan(self.files(), pattern, replacement, cap, _scope(paths)))

    async def replace_in_thread(
        self,
        query: str,
        replacement: str,
        regex: bool = False,
        exact: bool = True,
        limit: int | None = None,
        paths: Collection[str] | None = None,
        bounds: PatternBounds = DEFAULT_PATTERN_BOUNDS,
    ) -> ReplaceResult:
        """``replace``, compiling and matching on a worker thread; the edits (and their
        events) happen on the caller's thread.

        Should the workspace change while the thread works, it works again from the new files,
        within the same deadline.
        """
        cap, scope = _limit(limit), _scope(paths)
        replacement = _check_text(replacement, "replacement")
        pattern = await asyncio.to_thread(_compile, query, regex, exact, bounds)
        while True:
            files = self.files()
            plan = await asyncio.to_thread(_plan, files, pattern, replacement, cap, scope)
            # Identity first, element by element: unchanged files compare in no time.
            if self.files() == files:
                return self._apply(query, plan)
            pattern.check()

    def _apply(self, query: str, plan: _Replacing) -> ReplaceResult:
        for path, text in plan.texts.items():
            self._put(path, text)
        return ReplaceResult(query, plan.replaced, len(plan.texts))

    @overload
    def write(self, path: str, text: str) -> None: ...
    @overload
    def write(self, path: str, text: str, range: RangeInput) -> None: ...
    @overload
    def write(self, path: Mapping[str, str]) -> None: ...
    def write(
        self,
        path: str | Mapping[str, str],
        text: str | None = None,
        range: RangeInput | None = None,
    ) -> None:
        """Write a whole file, splice a range of an existing text file, or write a batch.

        A whole-file write keeps an existing text file's language (else infers it from the
        path) and retypes a binary file to text. A ranged write needs an existing text file
        (else ``MODALITY``) and a structurally valid range (else ``RANGE``); it is clamped.
        """
        if isinstance(path, Mapping):
            if text is not None or range is not None:
                raise TypeError("a batch write takes only the {path: text} dict")
            for one, body in _edits(path).items():
                self._put(one, body)
            return
        path, text = check_path(path), _check_text(text)
        if range is None:
            self._put(path, text)
            return
        span = to_range(range)
        existing = self._files.get(path)
        if existing is None or not isinstance(existing.content, TextContent):
            raise _modality(f"cannot splice a range of {path!r}: no text file there", path)
        if not is_valid_range(span):
            raise WorkspaceError(
                "RANGE",
                f"invalid range for {path!r}: {span.to_dict()}",
                context={"path": path, "range": span.to_dict()},
            )
        content = existing.content
        spliced = TextContent(splice_range(content.text, span, text), content.language)
        self._commit(create_file(path, spliced, "modified"))

    @overload
    def prepend(self, path: str, text: str) -> None: ...
    @overload
    def prepend(self, path: Mapping[str, str]) -> None: ...
    def prepend(self, path: str | Mapping[str, str], text: str | None = None) -> None:
        """Prepend text to a file (created when absent), or to each file of a batch."""
        self._extend("prepend", path, text)

    @overload
    def append(self, path: str, text: str) -> None: ...
    @overload
    def append(self, path: Mapping[str, str]) -> None: ...
    def append(self, path: str | Mapping[str, str], text: str | None = None) -> None:
        """Append text to a file (created when absent), or to each file of a batch."""
        self._extend("append", path, text)

    @overload
    def move(self, source: str, target: str) -> bool: ...
    @overload
    def move(self, source: Mapping[str, str] | Iterable[tuple[str, str]]) -> bool: ...
    def move(
        self,
        source: str | Mapping[str, str] | Iterable[tuple[str, str]],
        target: str | None = None,
    ) -> bool:
        """Re-key a file (overwriting an occupied target), or a batch of ``(from, to)`` pairs.

        Returns whether any file moved; an absent source is skipped. Moving a file onto its
        own path changes nothing and reports ``True``.
        """
        if isinstance(source, str):
            pairs = [(check_path(source, "source"), check_path(target, "target"))]
        else:
            if target is not None:
                raise TypeError("a batch move takes only the pairs")
            items = source.items() if isinstance(source, Mapping) else source
            pairs = []
            for pair in items:
                if not isinstance(pair, tuple | list) or len(pair) != 2:
                    raise TypeError(f"a batch move takes (from, to) pairs, not {pair!r}")
                pairs.append((check_path(pair[0], "source"), check_path(pair[1], "target")))
        moved = False
        for one, other in pairs:
            moved = self._move(one, other) or moved
        return moved

    @overload
    def remove(self) -> None: ...
    @overload
    def remove(self, path: str | Iterable[str]) -> bool: ...
    def remove(self, path: str | Iterable[str] | None = None) -> bool | None:
        """Drop one file or a list of them; ``remove()`` with no argument empties (as ``clear``).

        Returns whether any file was removed (``None`` for the no-argument form).
        """
        if path is None:
            self.clear()
            return None
        removed = False
        for one in [path] if isinstance(path, str) else _paths(path):
            if self._files.pop(one, None) is not None:
                removed = True
                self._emitter.emit("remove", one)
        return removed

    def clear(self) -> None:
        """Drop every file, then emit ``clear``."""
        self._files.clear()
        self._emitter.emit("clear")

    def snapshot(self) -> WorkspaceSnapshot:
        """The workspace as plain JSON: ``{"id": ..., "files": [...]}`` in insertion order."""
        return {"id": self._id, "files": [file_to_dict(file) for file in self._files.values()]}

    def _commit(self, file: File) -> None:
        self._files[file.path] = file
        self._emitter.emit("write", file)

    def _put(self, path: str, text: str) -> None:
        existing = self._files.get(path)
        kept = existing.content if existing is not None else None
        language = kept.language if isinstance(kept, TextContent) else infer_language(path)
        state: FileState = "created" if existing is None else "modified"
        self._commit(create_file(path, TextContent(text, language), state))

    def _extend(
        self, verb: Literal["prepend", "append"], path: str | Mapping[str, str], text: str | None
    ) -> None:
        if isinstance(path, Mapping):
            if text is not None:
                raise TypeError(f"a batch {verb} takes only the {{path: text}} dict")
            edits = _edits(path)
        else:
            edits = {check_path(path): _check_text(text)}
        # Check the whole batch's modality before changing anything.
        planned: dict[str, str] = {}
        for one, body in edits.items():
            existing = self._files.get(one)
            current = _text_of(existing)
            if existing is not None and current is None:
                raise _modality(f"cannot {verb} text to binary file {one!r}", one)
            current = current or ""
            planned[one] = body + current if verb == "prepend" else current + body
        for one, full in planned.items():
            self._put(one, full)

    def _move(self, source: str, target: str) -> bool:
        file = self._files.get(source)
        if file is None:
            return False
        if source == target:
            return True
        del self._files[source]
        self._files[target] = create_file(target, file.content, "modified")
        event: MoveEvent = {"from": source, "to": target}
        self._emitter.emit("move", event)
        return True


def create_workspace(
    id: str | None = None,
    on: WorkspaceListeners | None = None,
    error: ErrorHandler | None = None,
    seed: WorkspaceSeed | None = None,
) -> Workspace:
    """Create a ``Workspace`` (its ``id`` minted when omitted)."""
    return Workspace(id=id, on=on, error=error, seed=seed)
