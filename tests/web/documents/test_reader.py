"""``orkestrel.document_reader``: each format by its bytes (text by its name or type), the
text extracted page by page, and a clear refusal for anything else."""

from __future__ import annotations

import pytest

from orkestrel.document_reader import DOCX_MIME, DocumentRefused, read_document

from .files import make_docx, make_pdf


def test_a_pdf_is_read_page_by_page_whatever_its_name_says():
    document = read_document("notes.txt", make_pdf(["One.", None, "Three."]))
    assert (document.mime, document.pages, document.texts) == (
        "application/pdf",
        3,
        ("One.", "", "Three."),
    )


def test_docx_and_text_formats_are_one_text_without_pages():
    docx = read_document("memo.docx", make_docx(["Hello.", "Bye."]))
    assert (docx.mime, docx.pages, docx.texts) == (DOCX_MIME, None, ("Hello.\nBye.",))
    csv = read_document("rows.csv", b"\xef\xbb\xbfa,b\n1,2\n")
    assert (csv.mime, csv.texts) == ("text/csv", ("a,b\n1,2\n",))
    declared = read_document("pasted", b"# Title", "text/markdown; charset=utf-8")
    assert declared.mime == "text/markdown"


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("a.bin", b"\x00\x01", "unsupported"),
        ("a.txt", b"\xff\xfe bad", "unreadable"),
        ("a.txt", b"nul\x00inside", "unreadable"),
        ("a.pdf", b"%PDF-1.7 truncated", "unreadable"),
        ("a.docx", b"PK\x03\x04 not a zip", "unsupported"),
    ],
)
def test_what_cannot_be_read_is_refused_saying_why(name, data, code):
    with pytest.raises(DocumentRefused) as refused:
        read_document(name, data)
    assert refused.value.code == code
