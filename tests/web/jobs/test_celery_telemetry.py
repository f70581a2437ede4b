"""Telemetry across real processes: a Daphne server and a Celery worker export their spans to
an OTLP/HTTP collector (a loopback one, in this process, decoding OTLP's protobuf), and write
their Prometheus figures to one ``PROMETHEUS_MULTIPROC_DIR``.

A job posted to the API runs on a worker and delegates to a child job, which the broker
takes to a worker again: one trace holds the request's server span, the job's
``invoke_agent`` (its context came in the Celery message's headers), its ``chat`` and
``execute_tool delegate`` spans, and the child's ``invoke_agent`` under that call. A scrape of
the server's ``/metrics`` then shows the worker's figures.
"""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from prometheus_client.parser import text_string_to_metric_families

from tests.providers.server import Reply, StubServer
from tests.providers.turns import openai_turn

from .test_celery_workers import BROKER, settled, started_stack, until

pytestmark = pytest.mark.skipif(
    not BROKER, reason="set CELERY_BROKER_URL (Redis or RabbitMQ) to run jobs on Celery workers"
)

METRICS_TOKEN = "scrape-me-telemetry-tests"

TREE = """
from agents.models import AgentProfile, ProviderEndpoint, Tool
endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url={url!r})
tool, _ = Tool.objects.update_or_create(
    name="delegate", defaults={{"kind": "builtin", "timeout": 60.0}}
)
top = AgentProfile.objects.create(slug="top", name="top", model="stub/m")
child = AgentProfile.objects.create(slug="child", name="child", model="stub/m")
top.tools.add(tool)
top.may_delegate_to.add(child)
print("ok")
"""


@dataclass(frozen=True)
class Exported:
    """One span as the collector received it."""

    name: str
    trace: str
    span: str
    parent: str
    attributes: dict[str, Any]


@dataclass
class Collector:
    """An OTLP/HTTP trace receiver: every span any process exported, in arrival order."""

    url: str = ""
    spans: list[Exported] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, name: str) -> list[Exported]:
        with self.lock:
            return [span for span in self.spans if span.name == name]


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(item) for item in value.array_value.values)
    return getattr(value, kind) if kind else None


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    state = Collector()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if self.headers.get("content-encoding") == "gzip":
                body = gzip.decompress(body)
            request = ExportTraceServiceRequest()
            request.ParseFromString(body)
            found = [
                Exported(
                    name=span.name,
                    trace=span.trace_id.hex(),
                    span=span.span_id.hex(),
                    parent=span.parent_span_id.hex(),
                    attributes={item.key: _value(item.value) for item in span.attributes},
                )
                for resource in request.resource_spans
                for scope in resource.scope_spans
                for span in scope.spans
            ]
            with state.lock:
                state.spans.extend(found)
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture(scope="module")
def traced_stack(tmp_path_factory, collector):
    metrics = tmp_path_factory.mktemp("prometheus")
    extra = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.url,
        "OTEL_BSP_SCHEDULE_DELAY": "50",
        "OTEL_SERVICE_NAME": "orkestrel-tests",
        "PROMETHEUS_MULTIPROC_DIR": str(metrics),
        "METRICS_TOKEN": METRICS_TOKEN,
    }
    with started_stack(tmp_path_factory, extra) as made:
        yield made


@pytest.fixture
def api(traced_stack) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {traced_stack.key}"}
    with httpx.Client(base_url=traced_stack.url, headers=headers, timeout=30) as client:
        yield client
    traced_stack.stop_workers()


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


def scrape(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a scrape, by name and sorted labels."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_a_job_and_its_delegated_child_on_workers_are_one_trace_and_count_in_metrics(
    traced_stack, api, stub, collector
):
    traced_stack.shell(TREE.format(url=stub.url))
    stub.enqueue(
        Reply(openai_turn(calls=[("c1", "delegate", {"profile": "child", "task": "help"})])),
        Reply(openai_turn(["Helped."], usage=(7, 3))),
        Reply(openai_turn(["All done."])),
    )
    traced_stack.worker("t", concurrency=4)
    posted = api.post(
        "/api/jobs/", json={"profile": "top", "messages": [{"role": "user", "content": "go"}]}
    )
    assert posted.status_code == 202, posted.text
    job = posted.json()["id"]
    assert settled(api, job)["status"] == "done"

    top = until(lambda: collector.named("invoke_agent top"), "the job's span")[0]
    child = until(lambda: collector.named("invoke_agent child"), "the child's span")[0]
    delegate = until(lambda: collector.named("execute_tool delegate"), "the call's span")[0]
    (server,) = [
        span for span in collector.spans if span.span == top.parent and span.name.startswith("POST")
    ]
    # The request that posted the job (Daphne's process) is the root; the worker's job is its
    # child through the broker, and the child job (through the broker again) the call's.
    assert server.parent == ""
    assert {top.trace, child.trace, delegate.trace} == {server.trace}
    assert delegate.parent == top.span
    assert child.parent == delegate.span
    assert top.attributes["orkestrel.job.id"] == job
    assert top.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert top.attributes["orkestrel.run.status"] == "done"
    chats = until(
        lambda: (found := collector.named("chat m")) and len(found) >= 3 and found, "3 requests"
    )
    assert sorted(chat.parent for chat in chats) == sorted([top.span, top.span, child.span])
    (helped,) = [chat for chat in chats if chat.parent == child.span]
    assert helped.attributes["gen_ai.usage.input_tokens"] == 7
    assert helped.attributes["gen_ai.usage.output_tokens"] == 3
    assert helped.attributes["gen_ai.provider.name"] == "openai"

    # The worker ran both jobs: its figures reach the server's scrape (the shared directory).
    scraped = httpx.get(
        f"{traced_stack.url}/metrics",
        headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
        timeout=10,
    )
    assert scraped.status_code == 200
    samples = scrape(scraped.text)
    assert (
        samples[
            (
                "orkestrel_runs_total",
                (("kind", "job"), ("profile", "top"), ("status", "done"), ("stop_reason", "done")),
            )
        ]
        == 1
    )
    assert (
        samples[
            (
                "orkestrel_runs_total",
                (
                    ("kind", "job"),
                    ("profile", "child"),
                    ("status", "done"),
                    ("stop_reason", "done"),
                ),
            )
        ]
        == 1
    )
    assert (
        samples[
            (
                "orkestrel_tool_calls_total",
                (("decision", "allow"), ("outcome", "value"), ("tool", "delegate")),
            )
        ]
        == 1
    )
    model = (
        ("gen_ai_operation_name", "chat"),
        ("gen_ai_provider_name", "openai"),
        ("gen_ai_request_model", "m"),
    )
    assert (
        samples[("gen_ai_client_token_usage_count", (*model, ("gen_ai_token_type", "input")))] == 3
    )
    assert (
        samples[("gen_ai_client_token_usage_sum", (*model, ("gen_ai_token_type", "output")))] == 13
    )
    assert samples[("orkestrel_jobs", (("state", "queued"),))] == 0
    # Without the token it is not there at all.
    refused = httpx.get(f"{traced_stack.url}/metrics", timeout=10)
    assert refused.status_code == 404
