"""What telemetry is on in this process: read at startup (``tracing.configure``), flipped by
tests and ``bench/`` (``--telemetry``) at run time; nothing is observed while both are off."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer, TracerProvider

__all__ = ["SWITCH", "Switch", "observing"]


@dataclass(slots=True)
class Switch:
    """The process's telemetry state.

    Attributes:
        tracer: Where spans go (``None``: traces are off).
        provider: The tracer's provider (for the ASGI server spans).
        metrics: Whether the Prometheus series are kept.
        content: Whether spans carry message content (``OTEL_INSTRUMENTATION_GENAI_CAPTURE_
            MESSAGE_CONTENT``): prompts and answers are a person's words, off by default.
    """

    tracer: Tracer | None = None
    provider: TracerProvider | None = None
    metrics: bool = False
    content: bool = False


SWITCH = Switch()


def observing() -> bool:
    """Whether runs are observed at all (traces or metrics on)."""
    return SWITCH.tracer is not None or SWITCH.metrics
