"""``--telemetry`` for the benchmarks: a loopback OTLP/HTTP collector that takes the server's
spans (and counts them, in the benchmark's own process), and the server environment with
traces and metrics both on or both off (README, "Operating")."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

# What the server process reads to switch telemetry (``orkestrel.telemetry.tracing``).
_SWITCHES = (
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
    "OTEL_SDK_DISABLED",
)


class Sink:
    """A collector on 127.0.0.1 that answers every export with 200 and counts the spans."""

    def __init__(self) -> None:
        self.spans = 0
        self._lock = threading.Lock()
        sink = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                count = sum(
                    len(scope.spans)
                    for resource in request.resource_spans
                    for scope in resource.scope_spans
                )
                with sink._lock:
                    sink.spans += count
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


def telemetry_env(env: dict[str, str], on: bool, sink: Sink) -> dict[str, str]:
    """``env`` with traces (to ``sink``) and metrics both on, or both off."""
    changed = {key: value for key, value in env.items() if key not in _SWITCHES}
    changed["METRICS_ENABLED"] = "true" if on else "false"
    if on:
        changed["OTEL_EXPORTER_OTLP_ENDPOINT"] = sink.url
        changed.setdefault("OTEL_SERVICE_NAME", "orkestrel-bench")
    return changed
