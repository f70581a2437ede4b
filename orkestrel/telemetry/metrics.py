"""The Prometheus series of runs, model requests and tool calls, and their exposition.

Each process keeps its own figures; with ``PROMETHEUS_MULTIPROC_DIR`` set (before the process
starts: prometheus-client picks its storage at import) every process, web servers and Celery
workers alike, writes them to files there, and a scrape of any web process sums them all
(``exposition``). The series' labels are bounded sets (profiles, models, tools, statuses):
never a user, conversation or run id.

Gauges a process cannot know alone (approvals waiting, jobs queued and running) are read from
the database at scrape time by the caller's collector (``agents.metrics``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any, Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Metric
from prometheus_client.exposition import generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from . import conventions as names
from .switch import SWITCH

__all__ = [
    "COST",
    "FOLLOWERS",
    "OPERATION_DURATION",
    "REGISTRY",
    "RUNS",
    "TIME_TO_FIRST_TOKEN",
    "TOKEN_USAGE",
    "TOOL_CALLS",
    "child",
    "exposition",
    "follower",
    "multiprocess_dir",
]

# Whether this process writes its figures to files (decided as prometheus-client decided it).
_FILES: Final = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))

REGISTRY: Final = CollectorRegistry(auto_describe=True)

# The GenAI conventions' buckets: tokens in powers of four, seconds doubling from 10 ms.
TOKEN_BUCKETS: Final = tuple(float(4**power) for power in range(14))
SECONDS_BUCKETS: Final = tuple(0.01 * 2**power for power in range(14))
FIRST_TOKEN_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0)

_MODEL: Final = ("gen_ai_operation_name", "gen_ai_provider_name", "gen_ai_request_model")

TOKEN_USAGE: Final = Histogram(
    names.METRIC_TOKEN_USAGE,
    "Tokens one model request used, by token type (input, output).",
    [*_MODEL, "gen_ai_token_type"],
    buckets=TOKEN_BUCKETS,
    registry=REGISTRY,
)
OPERATION_DURATION: Final = Histogram(
    names.METRIC_OPERATION_DURATION,
    "How long one model request took, to its last chunk (error_type: blank when it succeeded).",
    [*_MODEL, "error_type"],
    buckets=SECONDS_BUCKETS,
    registry=REGISTRY,
)
TIME_TO_FIRST_TOKEN: Final = Histogram(
    names.METRIC_TIME_TO_FIRST_TOKEN,
    "Seconds from a model request's start to its first streamed chunk.",
    list(_MODEL),
    buckets=FIRST_TOKEN_BUCKETS,
    registry=REGISTRY,
)
RUNS: Final = Counter(
    "orkestrel_runs",
    "Runs and jobs that settled, by kind (chat, job), profile, status and stop reason.",
    ["kind", "profile", "status", "stop_reason"],
    registry=REGISTRY,
)
TOOL_CALLS: Final = Counter(
    "orkestrel_tool_calls",
    "Tool calls by tool and the authority's decision (allow, deny, ask) and outcome.",
    ["tool", "decision", "outcome"],
    registry=REGISTRY,
)
COST: Final = Counter(
    "orkestrel_cost_usd",
    "What model requests cost in USD, at the endpoint's prices (unpriced models add nothing).",
    ["profile", "gen_ai_request_model"],
    registry=REGISTRY,
)
FOLLOWERS: Final = Gauge(
    "orkestrel_followers",
    "Clients following runs now, by transport (websocket, sse).",
    ["transport"],
    registry=REGISTRY,
    multiprocess_mode="livesum",
)


_CHILDREN: dict[tuple[int, tuple[str, ...]], Any] = {}


def child(metric: Counter | Histogram | Gauge, *values: str) -> Any:
    """``metric.labels(*values)``, kept: label sets are few (profiles, models, tools), and a
    run asks for the same ones at every request."""
    key = (id(metric), values)
    found = _CHILDREN.get(key)
    if found is None:
        found = _CHILDREN[key] = metric.labels(*values)
    return found


def multiprocess_dir() -> str | None:
    """Where every process writes its figures (``PROMETHEUS_MULTIPROC_DIR``), if set."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


def exposition(extra: Iterable[Collector] = ()) -> bytes:
    """The text format of every process's figures and of ``extra`` collectors."""
    registry = CollectorRegistry(auto_describe=False)
    directory = multiprocess_dir()
    if directory:
        MultiProcessCollector(registry, path=directory)
    if not directory or not _FILES:
        # This process's own figures are not in the files: read them from memory.
        registry.register(_Own())
    for collector in extra:
        registry.register(collector)
    return generate_latest(registry)


class _Own(Collector):
    """This process's in-memory series (when they are not written to files)."""

    def collect(self) -> Iterable[Metric]:
        return REGISTRY.collect()


def _nothing() -> None:
    return None


def follower(transport: str) -> Callable[[], None]:
    """Count a client following runs over ``transport`` until the returned call (once)."""
    if not SWITCH.metrics:
        return _nothing
    gauge = FOLLOWERS.labels(transport)
    gauge.inc()
    done = False

    def release() -> None:
        nonlocal done
        if not done:
            done = True
            gauge.dec()

    return release
