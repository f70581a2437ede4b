"""The daily purge: the scheduler's tick runs it once per occurrence of ``PURGE_CRON``.

Every process that ticks (the server's, each worker's) asks at each tick; the first to insert
the occurrence's ``PurgeReport`` (its ``occurrence`` is unique) runs it, the others find it
taken. With nothing configured to expire, nothing is recorded. ``record`` keeps a report of a
purge the command ran.
"""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.db import IntegrityError, transaction

from orkestrel.cron import previous_due

from ..models import PurgeReport
from .policy import Retention
from .purge import PurgeResult, purge

__all__ = ["PURGE_CRON", "purge_if_due", "record"]

# At 03:30 UTC every day, unless ``ORKESTREL["PURGE_CRON"]`` says otherwise.
PURGE_CRON = "30 3 * * *"


def purge_if_due(now: datetime) -> PurgeResult | None:
    """Run the purge of the latest daily occurrence at or before ``now``, unless it ran (or
    nothing ever expires); what it did, or ``None``."""
    cron = getattr(settings, "ORKESTREL", {}).get("PURGE_CRON") or PURGE_CRON
    occurrence = previous_due(cron, "UTC", now)
    if PurgeReport.objects.filter(occurrence=occurrence).exists():
        return None
    retention = Retention.read()
    if retention.keeps_everything():
        return None
    try:
        with transaction.atomic():
            report = PurgeReport.objects.create(
                trigger=PurgeReport.Trigger.DAILY, occurrence=occurrence
            )
    except IntegrityError:
        return None  # another process took this occurrence
    result = purge(now=now, retention=retention)
    _finish(report, result, now)
    return result


def record(result: PurgeResult, now: datetime) -> PurgeReport:
    """Keep the report of a purge the command ran."""
    report = PurgeReport.objects.create(trigger=PurgeReport.Trigger.COMMAND, dry_run=result.dry_run)
    _finish(report, result, now)
    return report


def _finish(report: PurgeReport, result: PurgeResult, now: datetime) -> None:
    report.counts = dict(result.counts)
    report.finished = now
    report.save(update_fields=["counts", "finished"])
