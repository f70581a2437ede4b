"""Spans for the tests: OpenTelemetry's in-memory exporter behind the app's tracer, and the
span tree read back by name."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from orkestrel.telemetry.switch import SWITCH
from orkestrel.telemetry.tracing import use_tracer_provider


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """Traces on for the test, into an in-memory exporter (off again after it)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        use_tracer_provider(None)
        provider.shutdown()


@pytest.fixture
def content_captured() -> Iterator[None]:
    """The operator's opt-in to message content in spans, for the test."""
    SWITCH.content = True
    try:
        yield
    finally:
        SWITCH.content = False


def named(spans: Sequence[ReadableSpan], name: str) -> list[ReadableSpan]:
    """The spans called ``name``, in the order they ended."""
    return [span for span in spans if span.name == name]


def one(spans: Sequence[ReadableSpan], name: str) -> ReadableSpan:
    """The one span called ``name``."""
    found = named(spans, name)
    assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in spans]}"
    return found[0]


def parent_of(span: ReadableSpan) -> int | None:
    """The span id of ``span``'s parent (``None`` for a root)."""
    return span.parent.span_id if span.parent is not None else None


def span_id(span: ReadableSpan) -> int:
    context = span.context
    assert context is not None
    return context.span_id


def trace_id(span: ReadableSpan) -> int:
    context = span.context
    assert context is not None
    return context.trace_id
