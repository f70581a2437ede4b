"""Request and response bodies of the workspace file endpoints (one serializer per shape).

A ``PATCH`` body is one operation, told apart by ``op``; ``parse_edit`` validates it with the
operation's own serializer and answers the service's edit (``workspaces.services.FileEdit``).
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import PolymorphicProxySerializer
from rest_framework import serializers

from orkestrel.core import Range, range_of
from workspaces.services import Extend, FileEdit, Move, Replace, WriteRange

from .strict import StrictJson

__all__ = [
    "FileDetailSerializer",
    "FileEditSerializer",
    "FileEditedSerializer",
    "FileListSerializer",
    "FileReadQuerySerializer",
    "FileSerializer",
    "FileTextSerializer",
    "FileUploadSerializer",
    "parse_edit",
]

# An end column far past any line: "through the end of ``end_line``" (the kit clamps it).
_LINE_END = 2**31


class FileSerializer(serializers.Serializer[Any]):
    """A workspace file as listed."""

    path = serializers.CharField()
    kind = serializers.ChoiceField(choices=["text", "image"])
    language = serializers.CharField(help_text="A text file's language; empty for an image.")
    mime = serializers.CharField(help_text="An image's MIME type; empty for a text file.")
    size = serializers.IntegerField(help_text="Bytes (UTF-8 for text).")
    lines = serializers.IntegerField(help_text="Lines of a text file; 0 for an image.")
    state = serializers.ChoiceField(choices=["created", "modified", "loaded", "deleted"])


class FileListSerializer(serializers.Serializer[Any]):
    files = FileSerializer(many=True)


class PositionSerializer(serializers.Serializer[Any]):
    """A 1-based caret: column 1 is a line's first character."""

    line = serializers.IntegerField(min_value=1)
    column = serializers.IntegerField(min_value=1)


class RangeSerializer(serializers.Serializer[Any]):
    """A half-open span: ``start`` inclusive, ``end`` exclusive; clamped to the text."""

    start = PositionSerializer()
    end = PositionSerializer()

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        start, end = attrs["start"], attrs["end"]
        if (start["line"], start["column"]) > (end["line"], end["column"]):
            raise serializers.ValidationError({"end": ["The range ends before it starts."]})
        return attrs


def _range(value: dict[str, Any]) -> Range:
    start, end = value["start"], value["end"]
    return range_of(start["line"], start["column"], end["line"], end["column"])


class FileDetailSerializer(FileSerializer):
    """A file as read: a text file's ``text`` (of the span asked for, with its ``range``)."""

    text = serializers.CharField(
        required=False, help_text="A text file's text, or of a ranged read its span."
    )
    range = RangeSerializer(required=False, help_text="The span a ranged read applied (clamped).")


class FileEditedSerializer(FileSerializer):
    """A file after an edit; a ``replace`` also counts its replacements."""

    replaced = serializers.IntegerField(
        required=False, help_text="How many matches a `replace` changed (only for `replace`)."
    )


class FileReadQuerySerializer(serializers.Serializer[Any]):
    """The query of a read: a span by lines (and columns), or the raw bytes."""

    start_line = serializers.IntegerField(
        min_value=1, required=False, help_text="First line of a ranged read (1-based; default 1)."
    )
    start_column = serializers.IntegerField(
        min_value=1, required=False, help_text="Its first column (default 1)."
    )
    end_line = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text="Last line, inclusive without `end_column` (default: the last line).",
    )
    end_column = serializers.IntegerField(
        min_value=1,
        required=False,
        help_text="Column where the span ends, exclusive (default: the end of `end_line`).",
    )
    raw = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Answer the file's bytes: an image's with its MIME type, text as text/plain.",
    )

    _SPAN = ("start_line", "start_column", "end_line", "end_column")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        given = [name for name in self._SPAN if name in attrs]
        if given and attrs["raw"]:
            raise serializers.ValidationError({"raw": ["A raw read takes no range."]})
        if "end_column" in attrs and "end_line" not in attrs:
            raise serializers.ValidationError({"end_line": ["`end_column` needs `end_line`."]})
        if not given:
            return {**attrs, "span": None}
        start = (attrs.get("start_line", 1), attrs.get("start_column", 1))
        end = (attrs.get("end_line", _LINE_END), attrs.get("end_column", _LINE_END))
        if start > end:
            raise serializers.ValidationError({"end_line": ["The range ends before it starts."]})
        return {**attrs, "span": range_of(*start, *end)}


class FileTextSerializer(StrictJson, serializers.Serializer[Any]):
    """A whole text file (UTF-8, at most 1 MB)."""

    text = serializers.CharField(allow_blank=True, trim_whitespace=False)


class FileUploadSerializer(serializers.Serializer[Any]):
    """An uploaded file: text (UTF-8, at most 1 MB) or an image (PNG, JPEG, GIF or WebP)."""

    file = serializers.FileField(allow_empty_file=True)


class _Op(serializers.Serializer[Any]):
    """Only which edit it is (the edit's own serializer reads, and checks, the rest)."""

    op = serializers.ChoiceField(choices=["write", "prepend", "append", "replace", "move"])


class WriteEditSerializer(StrictJson, serializers.Serializer[Any]):
    """Replace a span of a text file with ``text`` (an empty span inserts)."""

    op = serializers.ChoiceField(choices=["write"])
    range = RangeSerializer()
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def edit(self) -> FileEdit:
        data = self.validated_data
        return WriteRange(range=_range(data["range"]), text=data["text"])


class ExtendEditSerializer(StrictJson, serializers.Serializer[Any]):
    """Add ``text`` at the start (``prepend``) or the end (``append``) of a text file."""

    op = serializers.ChoiceField(choices=["prepend", "append"])
    text = serializers.CharField(allow_blank=True, trim_whitespace=False)

    def edit(self) -> FileEdit:
        return Extend(op=self.validated_data["op"], text=self.validated_data["text"])


class ReplaceEditSerializer(StrictJson, serializers.Serializer[Any]):
    """Replace matches of ``search`` in the file by the literal ``replace``."""

    op = serializers.ChoiceField(choices=["replace"])
    search = serializers.CharField(
        trim_whitespace=False, help_text="Literal text, or a Python regular expression."
    )
    replace = serializers.CharField(
        allow_blank=True,
        trim_whitespace=False,
        help_text="Inserted verbatim: no backreferences, as the agent's tool.",
    )
    regex = serializers.BooleanField(
        required=False, default=False, help_text="Treat `search` as a regex."
    )
    exact = serializers.BooleanField(
        required=False,
        default=True,
        help_text="Match case exactly (the default); false ignores case.",
    )
    limit = serializers.IntegerField(
        min_value=1,
        required=False,
        allow_null=True,
        default=None,
        help_text="Replace at most this many matches (null: all).",
    )

    def edit(self) -> FileEdit:
        data = self.validated_data
        return Replace(
            search=data["search"],
            replace=data["replace"],
            regex=data["regex"],
            exact=data["exact"],
            limit=data["limit"],
        )


class MoveEditSerializer(StrictJson, serializers.Serializer[Any]):
    """Give the file another path (an occupied path is a 409)."""

    op = serializers.ChoiceField(choices=["move"])
    to = serializers.CharField(trim_whitespace=False, help_text="The new path.")

    def edit(self) -> FileEdit:
        return Move(to=self.validated_data["to"])


_EDITS: dict[str, type[Any]] = {
    "write": WriteEditSerializer,
    "prepend": ExtendEditSerializer,
    "append": ExtendEditSerializer,
    "replace": ReplaceEditSerializer,
    "move": MoveEditSerializer,
}

FileEditSerializer = PolymorphicProxySerializer(
    component_name="FileEdit",
    serializers={
        "write": WriteEditSerializer,
        "prepend": ExtendEditSerializer,
        "append": ExtendEditSerializer,
        "replace": ReplaceEditSerializer,
        "move": MoveEditSerializer,
    },
    resource_type_field_name="op",
)


def parse_edit(data: Any) -> FileEdit:
    """The edit a ``PATCH`` body asks for (``ValidationError`` with field errors if invalid)."""
    head = _Op(data=data)
    head.is_valid(raise_exception=True)
    serializer = _EDITS[head.validated_data["op"]](data=data)
    serializer.is_valid(raise_exception=True)
    edit: FileEdit = serializer.edit()
    return edit
