"""Turning telemetry on from the environment, at process start (web and workers alike).

Traces are on only when an OTLP endpoint is configured (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) and neither ``OTEL_SDK_DISABLED=true`` nor
``OTEL_TRACES_EXPORTER=none`` says otherwise; the SDK and the OTLP/HTTP exporter are imported
only then, so a process without them pays nothing at start. The exporter reads the standard
``OTEL_*`` variables itself (headers, timeout, protocol), the resource ``OTEL_SERVICE_NAME``
and ``OTEL_RESOURCE_ATTRIBUTES``, the sampler ``OTEL_TRACES_SAMPLER``. Metrics are on unless
``METRICS_ENABLED=false``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from opentelemetry import trace

from .switch import SWITCH

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["TRACER_NAME", "configure", "traces_wanted", "use_tracer_provider"]

TRACER_NAME = "orkestrel"
_FALSE = {"0", "false", "no", "off"}


def traces_wanted(environ: Mapping[str, str]) -> bool:
    """Whether ``environ`` asks for traces (an endpoint, and not switched off)."""
    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if not endpoint:
        return False
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower() != "none"


def configure(environ: Mapping[str, str]) -> None:
    """Set this process's switch from ``environ`` (once, at start); idempotent."""
    SWITCH.metrics = environ.get("METRICS_ENABLED", "true").strip().lower() not in _FALSE
    SWITCH.content = (
        environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "").strip().lower()
        == "true"
    )
    if SWITCH.tracer is not None or not traces_wanted(environ):
        return
    # Imported here: only a process that exports spans loads the SDK and the exporter.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    resource = Resource.create({"service.name": environ.get("OTEL_SERVICE_NAME", "orkestrel")})
    provider = SdkTracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    use_tracer_provider(provider)


def use_tracer_provider(provider: TracerProvider | None) -> None:
    """Send spans to ``provider`` (``None``: traces off). Tests give an in-memory one."""
    SWITCH.provider = provider
    SWITCH.tracer = None if provider is None else provider.get_tracer(TRACER_NAME)
