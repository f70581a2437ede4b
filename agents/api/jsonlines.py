"""JSON Lines (``application/jsonl``) for conversation export and import."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import IO, Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser
from rest_framework.renderers import BaseRenderer

from orkestrel.protocol import encode_text

__all__ = ["JsonLinesParser", "JsonLinesRenderer", "MEDIA_TYPE", "to_lines"]

MEDIA_TYPE = "application/jsonl"


def to_lines(records: Iterable[Mapping[str, Any]]) -> str:
    """Records as JSON Lines, one object per line."""
    return "".join(encode_text(record) + "\n" for record in records)


class JsonLinesParser(BaseParser):
    """The body's lines, decoded as UTF-8 (each line is parsed by the import itself)."""

    media_type = MEDIA_TYPE

    # DRF takes whatever a parser returns as ``request.data``; its stubs narrow that to a mapping.
    def parse(  # type: ignore[override]
        self,
        stream: IO[Any],
        media_type: str | None = None,
        parser_context: Mapping[str, Any] | None = None,
    ) -> list[str]:
        try:
            return stream.read().decode("utf-8").splitlines()
        except UnicodeDecodeError:
            raise ParseError("The body is not UTF-8 text.") from None


class JsonLinesParserNdjson(JsonLinesParser):
    """The same, under the older ``application/x-ndjson`` name."""

    media_type = "application/x-ndjson"


class JsonLinesRenderer(BaseRenderer):
    media_type = MEDIA_TYPE
    format = "jsonl"
    charset = "utf-8"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        records = data if isinstance(data, list) else [data]
        return to_lines(records).encode()
