"""Reading an attached file into a ``Document``: its format by its bytes, its text extracted.

Formats (README, "Documents"): PDF (text by ``pypdf``, page by page), DOCX (paragraphs and
tables by ``python-docx``), and UTF-8 plain text, Markdown and CSV (by their name or declared
type). A PDF page with no text layer (a scan) keeps an empty text; the model is told that page
has none. Limits are ``ORKESTREL["MAX_DOCUMENT_BYTES"]`` and ``ORKESTREL["MAX_DOCUMENT_PAGES"]``;
anything over them, or unreadable, is refused with a ``DocumentRefused`` saying why.
"""

from __future__ import annotations

import base64
import io
import logging
import posixpath
import zipfile
from typing import Final, Literal

import docx
from django.conf import settings
from pypdf import PdfReader
from pypdf.errors import PdfReadError

from orkestrel.core.documents import PDF_MIME, Document

__all__ = [
    "DOCUMENT_TYPES",
    "DOCX_MIME",
    "DocumentRefused",
    "document_kind",
    "max_document_bytes",
    "max_document_pages",
    "read_document",
]

logger = logging.getLogger(__name__)

DOCX_MIME: Final = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
# Text formats by file extension; a declared type of one of them counts too.
_TEXT_TYPES: Final = {
    ".txt": "text/plain",
    ".text": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
}
# What a file picker may offer (``accept``), and what the README lists.
DOCUMENT_TYPES: Final = (PDF_MIME, DOCX_MIME, "text/plain", "text/markdown", "text/csv")
DEFAULT_MAX_DOCUMENT_BYTES: Final = 10 * 1024 * 1024
DEFAULT_MAX_DOCUMENT_PAGES: Final = 100

RefusalCode = Literal["too_large", "too_many_pages", "unsupported", "unreadable"]


class DocumentRefused(ValueError):
    """A file that cannot be attached as a document; ``code`` says why, ``str()`` says so."""

    def __init__(self, code: RefusalCode, message: str) -> None:
        super().__init__(message)
        self.code: RefusalCode = code


def max_document_bytes() -> int:
    """The largest document accepted (``ORKESTREL["MAX_DOCUMENT_BYTES"]``)."""
    limits = getattr(settings, "ORKESTREL", {})
    return int(limits.get("MAX_DOCUMENT_BYTES", DEFAULT_MAX_DOCUMENT_BYTES))


def max_document_pages() -> int:
    """The most pages a PDF may have (``ORKESTREL["MAX_DOCUMENT_PAGES"]``)."""
    limits = getattr(settings, "ORKESTREL", {})
    return int(limits.get("MAX_DOCUMENT_PAGES", DEFAULT_MAX_DOCUMENT_PAGES))


def _is_docx(data: bytes) -> bool:
    if not data.startswith(b"PK\x03\x04"):
        return False
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            return "word/document.xml" in archive.namelist()
    except zipfile.BadZipFile:
        return False


def document_kind(name: str, data: bytes, declared: str = "") -> str | None:
    """The document type of a file (PDF and DOCX by their bytes, text by its name or
    ``declared`` type), or ``None`` when it is none of ``DOCUMENT_TYPES``."""
    if data.startswith(b"%PDF-"):
        return PDF_MIME
    if _is_docx(data):
        return DOCX_MIME
    extension = posixpath.splitext(name.lower())[1]
    declared = declared.split(";")[0].strip().lower()
    if extension in _TEXT_TYPES:
        return _TEXT_TYPES[extension]
    if declared in _TEXT_TYPES.values():
        return declared
    return None


def _clean_name(name: str, mime: str) -> str:
    base = posixpath.basename(name.replace("\\", "/")).strip()
    base = "".join(char for char in base if char.isprintable() and char not in '"<>')[:200]
    if base:
        return base
    return {PDF_MIME: "document.pdf", DOCX_MIME: "document.docx"}.get(mime, "document.txt")


def _pdf_pages(data: bytes, limit: int) -> tuple[str, ...]:
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise DocumentRefused("unreadable", "The PDF is encrypted; attach an unlocked copy.")
        count = len(reader.pages)
        if count > limit:
            raise DocumentRefused(
                "too_many_pages", f"The PDF has {count} pages; at most {limit} are accepted."
            )
        return tuple((page.extract_text() or "").strip() for page in reader.pages)
    except DocumentRefused:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError, OSError) as error:
        logger.info("an attached PDF could not be read: %s", error)
        raise DocumentRefused("unreadable", "The PDF could not be read.") from None


def _docx_text(data: bytes) -> str:
    try:
        document = docx.Document(io.BytesIO(data))
    except (ValueError, KeyError, zipfile.BadZipFile, OSError) as error:
        logger.info("an attached DOCX could not be read: %s", error)
        raise DocumentRefused("unreadable", "The DOCX file could not be read.") from None
    blocks = [paragraph.text for paragraph in document.paragraphs]
    for table in document.tables:
        for row in table.rows:
            blocks.append(" | ".join(cell.text.strip() for cell in row.cells))
    return "\n".join(blocks).strip()


def _plain_text(data: bytes) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise DocumentRefused("unreadable", "The text file is not UTF-8.") from None
    if "\x00" in text:
        raise DocumentRefused("unreadable", "The text file holds binary data.")
    return text


def read_document(name: str, data: bytes, declared: str = "") -> Document:
    """``data`` (the file called ``name``, typed ``declared`` by its sender) as a
    ``Document``, its text extracted; ``DocumentRefused`` when it is too large, has too many
    pages, is no supported format, or cannot be read."""
    limit = max_document_bytes()
    if len(data) > limit:
        raise DocumentRefused("too_large", f"The document is larger than {limit} bytes.")
    mime = document_kind(name, data, declared)
    if mime is None:
        raise DocumentRefused(
            "unsupported", "Attach a PDF, DOCX, plain text, Markdown or CSV document."
        )
    pages: int | None = None
    if mime == PDF_MIME:
        texts = _pdf_pages(data, max_document_pages())
        pages = len(texts)
    elif mime == DOCX_MIME:
        texts = (_docx_text(data),)
    else:
        texts = (_plain_text(data),)
    return Document(
        name=_clean_name(name, mime),
        mime=mime,
        data=base64.b64encode(data).decode("ascii"),
        size=len(data),
        texts=texts,
        pages=pages,
    )
