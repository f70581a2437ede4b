"""Documents in ``/v1`` requests: Chat Completions ``file`` parts, Responses ``input_file``.

Both carry the file inline as a ``data:`` URL (``file_data``) with its ``filename``; a file
uploaded to OpenAI's Files API (``file_id``) or one on the web (``file_url``) is not fetched.
The document is read as an upload in the chat is (``orkestrel.document_reader``).
"""

from __future__ import annotations

import base64
import binascii
import re

from orkestrel.core.documents import Document
from orkestrel.document_reader import DocumentRefused, read_document
from orkestrel.protocol import MAX_IMAGES

from .errors import OpenAIError, bad_request

__all__ = ["MAX_DOCUMENTS", "data_url_document"]

# As many documents per message as images: what the chat allows an attachment.
MAX_DOCUMENTS = MAX_IMAGES
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[\w=.-]+)*;base64,(.*)$", re.DOTALL)
_STATUS = {"too_large": 413, "too_many_pages": 400, "unsupported": 400, "unreadable": 400}


def data_url_document(
    file_data: object, filename: object, param: str, count: int, *, file_id: object = None
) -> Document:
    """The document a ``file`` part (``param`` its place) sends as a ``data:`` URL; a clear
    4xx (``OpenAIError``) when it is missing, too large, of too many pages or unreadable."""
    if count >= MAX_DOCUMENTS:
        raise bad_request(f"At most {MAX_DOCUMENTS} files per message.", param)
    if file_data is None and file_id is not None:
        raise bad_request(
            f"'{param}.file_id' is not supported: send the file inline as 'file_data' "
            "(a data: URL); this server keeps no uploaded files.",
            f"{param}.file_id",
            "unsupported_value",
        )
    found = _DATA_URL.match(file_data) if isinstance(file_data, str) else None
    if found is None:
        raise bad_request(
            f"'{param}.file_data' must be a data: URL (base64) of a PDF, DOCX, plain text, "
            "Markdown or CSV document.",
            f"{param}.file_data",
            "invalid_file",
        )
    try:
        data = base64.b64decode(found.group(2), validate=True)
    except (binascii.Error, ValueError):
        raise bad_request(
            f"'{param}.file_data' is not valid base64.", f"{param}.file_data", "invalid_file"
        ) from None
    name = filename if isinstance(filename, str) else ""
    try:
        return read_document(name, data, found.group(1) or "")
    except DocumentRefused as refused:
        raise OpenAIError(
            _STATUS[refused.code],
            f"'{param}': {refused}",
            param=f"{param}.file_data",
            code=f"document_{refused.code}",
        ) from None
