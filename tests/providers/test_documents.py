"""Documents at the model's boundary: a model that reads documents gets the PDF itself
(Anthropic ``document`` blocks, OpenAI ``file`` parts); every other model, and every format
but PDF, gets the extracted text, a page without text said to have none."""

from __future__ import annotations

from typing import Any

from orkestrel.core.abort import AbortSignal
from orkestrel.core.documents import Document
from orkestrel.core.messages import Message
from orkestrel.providers import AnthropicProvider, OllamaProvider, OpenAIProvider

from .server import StubServer
from .turns import reply

PDF = Document(
    name="report.pdf",
    mime="application/pdf",
    data="JVBERi0xLjQ=",
    size=8,
    texts=("Revenue grew.", ""),
    pages=2,
)
CSV = Document(name="rows.csv", mime="text/csv", data="YSxiCg==", size=4, texts=("a,b\n",))
ASKED = [Message("m1", "user", "Summarize these.", documents=(PDF, CSV))]


async def _sent(provider: Any, stub: StubServer, protocol: str) -> dict[str, Any]:
    stub.enqueue(reply(protocol, ["ok"]))
    await provider.generate(ASKED, AbortSignal())
    return stub.requests[-1].json()


async def test_an_openai_model_that_reads_documents_gets_the_pdf_as_a_file_part(stub):
    provider = OpenAIProvider(
        model="gpt-4o", base_url=f"{stub.url}/v1", retries=0, native_documents=True
    )
    parts = (await _sent(provider, stub, "openai"))["messages"][-1]["content"]
    assert parts[0] == {"type": "text", "text": "Summarize these."}
    assert parts[1] == {
        "type": "file",
        "file": {"filename": "report.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQ="},
    }
    # A CSV is no PDF: its text, whatever the model reads.
    assert parts[2]["type"] == "text" and "a,b" in parts[2]["text"]


async def test_an_openai_model_without_document_input_gets_the_extracted_text(stub):
    provider = OpenAIProvider(model="local", base_url=f"{stub.url}/v1", retries=0)
    parts = (await _sent(provider, stub, "openai"))["messages"][-1]["content"]
    assert [part["type"] for part in parts] == ["text", "text", "text"]
    assert parts[1]["text"].startswith(
        '<document name="report.pdf" type="application/pdf" pages=2>'
    )
    assert "--- page 1 ---\nRevenue grew." in parts[1]["text"]
    assert "page 2 has no extractable text" in parts[1]["text"]
    assert "JVBERi0xLjQ=" not in str(parts)


async def test_an_anthropic_model_that_reads_documents_gets_a_document_block(stub):
    provider = AnthropicProvider(
        model="claude-sonnet-4-5", base_url=stub.url, retries=0, native_documents=True
    )
    blocks = (await _sent(provider, stub, "anthropic"))["messages"][-1]["content"]
    assert blocks[0] == {
        "type": "document",
        "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
        "title": "report.pdf",
    }
    assert blocks[1]["type"] == "text" and "a,b" in blocks[1]["text"]
    assert blocks[-1] == {"type": "text", "text": "Summarize these."}


async def test_an_anthropic_model_without_document_input_gets_the_extracted_text(stub):
    provider = AnthropicProvider(model="claude-sonnet-4-5", base_url=stub.url, retries=0)
    blocks = (await _sent(provider, stub, "anthropic"))["messages"][-1]["content"]
    assert [block["type"] for block in blocks] == ["text", "text", "text"]
    assert "Revenue grew." in blocks[0]["text"]


async def test_ollama_reads_the_documents_text_after_the_message(stub):
    provider = OllamaProvider(model="llama3", base_url=stub.url, retries=0, native_documents=True)
    content = (await _sent(provider, stub, "ollama"))["messages"][-1]["content"]
    assert content.startswith('Summarize these.\n\n<document name="report.pdf"')
    assert "page 2 has no extractable text" in content and "a,b" in content
