"""Operating telemetry: traces in OpenTelemetry's GenAI conventions, Prometheus metrics, and
JSON log lines, each off or cheap until an operator turns it on (README, "Operating").

The kit knows nothing of this: it calls a ``RunObserver`` (``orkestrel.core.observer``);
``observer.RunTelemetry`` is ours, made per run by the apps (``observe``) only when traces
or metrics are on. ``conventions`` holds every attribute and metric name in one place;
``switch`` says what is on; ``tracing`` sets up the exporter from the standard ``OTEL_*``
variables; ``propagation`` carries a trace across Celery and outgoing HTTP; ``metrics``
declares the Prometheus series; ``logs`` formats JSON lines.
"""
