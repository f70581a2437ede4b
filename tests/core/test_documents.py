"""Documents on messages in the kit: kept through the message's JSON, read as text by a model
without document input (a page without text said to have none), counted in the estimate and
found by search."""

from __future__ import annotations

import pytest

from orkestrel.core import create_conversation, estimate_messages
from orkestrel.core.documents import Document, document_text, to_document
from orkestrel.core.messages import Message, create_message, is_message, message_to_dict

REPORT = Document(
    name="report.pdf",
    mime="application/pdf",
    data="JVBERi0=",
    size=5,
    texts=("Revenue grew by twelve percent.", "", "Appendix"),
    pages=3,
)
NOTES = Document(
    name="notes.md", mime="text/markdown", data="IyBOb3Rlcw==", size=7, texts=("# Notes",)
)


def test_a_message_keeps_its_documents_through_its_json():
    message = Message("m1", "user", "read this", documents=(REPORT, NOTES))
    data = message_to_dict(message)
    assert data["documents"][0] == {
        "name": "report.pdf",
        "mime": "application/pdf",
        "data": "JVBERi0=",
        "size": 5,
        "texts": ["Revenue grew by twelve percent.", "", "Appendix"],
        "pages": 3,
    }
    assert "pages" not in data["documents"][1]
    assert is_message(data)
    assert create_message(data) == message


def test_a_malformed_document_is_refused_naming_the_field():
    with pytest.raises(TypeError, match="document texts"):
        to_document({"name": "a", "mime": "text/plain", "data": "", "size": 0, "texts": "x"})
    assert not is_message({"id": "m", "role": "user", "content": "", "documents": [{"name": 1}]})


def test_the_text_a_model_reads_names_the_document_its_pages_and_the_pages_without_text():
    text = document_text(REPORT)
    assert text.startswith('<document name="report.pdf" type="application/pdf" pages=3>')
    assert "--- page 1 ---\nRevenue grew by twelve percent." in text
    assert "[page 2 has no extractable text" in text
    assert "--- page 3 ---\nAppendix" in text
    assert (
        document_text(NOTES)
        == '<document name="notes.md" type="text/markdown">\n# Notes\n</document>'
    )


def test_the_estimate_counts_a_documents_text():
    bare = Message("m1", "user", "read this")
    with_document = Message("m1", "user", "read this", documents=(REPORT,))
    assert (
        estimate_messages([with_document]) - estimate_messages([bare])
        >= len(document_text(REPORT)) // 4
    )


def test_search_finds_a_message_by_its_documents_text():
    conversation = create_conversation()
    conversation.add({"role": "user", "content": "see attached", "documents": [REPORT.to_dict()]})
    conversation.add({"role": "assistant", "content": "noted"})
    found = conversation.search("TWELVE percent")
    assert [message.content for message in found] == ["see attached"]
