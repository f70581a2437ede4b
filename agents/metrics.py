"""``GET /metrics``: the Prometheus series of every process (``orkestrel.telemetry.metrics``)
and the gauges the database knows (approvals waiting, jobs queued and running).

Only for the scraper and staff: a request with ``Authorization: Bearer <METRICS_TOKEN>`` or
a staff session. Anyone else gets a 404, as if there were no such page (the figures say how
busy the service is and which profiles and tools it has). With no ``METRICS_TOKEN`` set, only
staff can read it.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector

from conversations.models import ToolApproval
from orkestrel.telemetry.metrics import exposition

from .models import AgentJob

__all__ = ["DatabaseGauges", "metrics", "may_read_metrics"]


class DatabaseGauges(Collector):
    """What no one process counts: read from the database at each scrape."""

    def collect(self) -> Iterator[Metric]:
        waiting = ToolApproval.objects.filter(status=ToolApproval.Status.PENDING).count()
        yield GaugeMetricFamily(
            "orkestrel_approvals_waiting",
            "Tool calls waiting for a person's approval.",
            value=waiting,
        )
        counts = dict(
            AgentJob.objects.filter(status__in=AgentJob.OPEN)
            .values_list("status")
            .annotate(count=Count("pk"))
            .values_list("status", "count")
        )
        jobs = GaugeMetricFamily(
            "orkestrel_jobs", "Agent jobs queued and running now.", labels=["state"]
        )
        for state in (AgentJob.Status.QUEUED, AgentJob.Status.RUNNING):
            jobs.add_metric([str(state)], counts.get(state, 0))
        yield jobs


def may_read_metrics(request: HttpRequest) -> bool:
    """Whether ``request`` carries the metrics token, or comes from a staff session."""
    token = getattr(settings, "METRICS_TOKEN", "")
    sent = request.headers.get("Authorization", "")
    if (
        token
        and sent.startswith("Bearer ")
        and hmac.compare_digest(sent[len("Bearer ") :].encode(), token.encode())
    ):
        return True
    user = getattr(request, "user", None)
    return bool(user is not None and user.is_active and user.is_staff)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    """The Prometheus text format; a 404 without the token or a staff session."""
    if not may_read_metrics(request):
        raise Http404("no such page")
    return HttpResponse(exposition([DatabaseGauges()]), content_type=CONTENT_TYPE_LATEST)
