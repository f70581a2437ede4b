"""Real documents made in the tests: PDFs by fpdf2 (a page may have no text, as a scan has
none), DOCX files by python-docx."""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence

import docx
from fpdf import FPDF


def make_pdf(pages: Sequence[str | None]) -> bytes:
    """A PDF with one page per entry: its text, or (``None``) a drawn box and no text."""
    pdf = FPDF()
    pdf.set_font("helvetica", size=12)
    for text in pages:
        pdf.add_page()
        if text is None:
            pdf.rect(20, 20, 100, 60, style="F")  # ink, but no text layer: a "scan"
        else:
            pdf.multi_cell(0, 8, text)
    return bytes(pdf.output())


def make_docx(paragraphs: Sequence[str]) -> bytes:
    """A DOCX holding ``paragraphs``."""
    document = docx.Document()
    for paragraph in paragraphs:
        document.add_paragraph(paragraph)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def data_url(data: bytes, mime: str = "application/pdf") -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"
