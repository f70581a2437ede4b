"""Documents a user attached to a message: the file for models that read it, its text for all.

A ``Document`` keeps the original bytes (base64) beside the text extracted when it was
attached, page by page for a PDF. A provider whose model reads documents natively sends the
bytes (Anthropic ``document`` blocks, OpenAI ``file`` parts: PDF only); every other model, and
every other format, reads ``document_text``: the same text search and compaction see.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "PDF_MIME",
    "Document",
    "document_text",
    "documents_text",
    "to_document",
]

PDF_MIME: Final = "application/pdf"


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """A document on a user message.

    ``texts`` is the extracted text of each page of a PDF, or one entry for a format without
    pages (DOCX, plain text, Markdown, CSV); ``pages`` is the PDF's page count (``None``
    otherwise). A page whose text is empty had none to extract (a scanned image).
    """

    name: str
    mime: str
    data: str
    size: int
    texts: tuple[str, ...]
    pages: int | None = None

    @property
    def native(self) -> bool:
        """Whether a model that reads documents can take the file itself (a PDF)."""
        return self.mime == PDF_MIME

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "mime": self.mime,
            "data": self.data,
            "size": self.size,
            "texts": list(self.texts),
        }
        if self.pages is not None:
            data["pages"] = self.pages
        return data


def to_document(value: Document | Mapping[str, Any]) -> Document:
    """Coerce a mapping (``Document.to_dict``) into a ``Document``; ``TypeError`` names the
    bad field."""
    if isinstance(value, Document):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"document must be a mapping, not {type(value).__name__}")
    for field in ("name", "mime", "data"):
        if not isinstance(value.get(field), str):
            raise TypeError(f"document {field} must be a string")
    size, pages, texts = value.get("size"), value.get("pages"), value.get("texts")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise TypeError("document size must be a non-negative integer")
    if pages is not None and (not isinstance(pages, int) or isinstance(pages, bool)):
        raise TypeError("document pages must be an integer")
    if (
        isinstance(texts, str | bytes)
        or not isinstance(texts, Sequence)
        or not all(isinstance(text, str) for text in texts)
    ):
        raise TypeError("document texts must be a list of strings")
    return Document(
        name=value["name"],
        mime=value["mime"],
        data=value["data"],
        size=size,
        texts=tuple(texts),
        pages=pages,
    )


def _empty_page(number: int) -> str:
    return f"[page {number} has no extractable text: it may be a scanned image]"


def document_text(document: Document) -> str:
    """The document as a model without document input reads it: its name, page count and
    text, each PDF page headed, a page without text said to have none."""
    pages = f" pages={document.pages}" if document.pages is not None else ""
    head = f'<document name="{document.name}" type="{document.mime}"{pages}>'
    if document.pages is None:
        body = document.texts[0] if document.texts else ""
    else:
        body = "\n\n".join(
            f"--- page {number} ---\n{text}" if text.strip() else _empty_page(number)
            for number, text in enumerate(document.texts, start=1)
        )
    return f"{head}\n{body}\n</document>"


def documents_text(documents: Sequence[Document] | None) -> str:
    """Every document's ``document_text``, blank-line separated ("" without documents)."""
    return "\n\n".join(document_text(document) for document in documents or ())
