"""Agent jobs: the kit's durable queue over the database, run on Celery workers when a broker
is configured (``tasks``), else in the server process.

Modules: ``service`` (what front doors call: enqueue, get, list, cancel, wait, and
``restore_jobs`` for the ASGI startup), ``registry`` (the kit's ``AgentRegistry`` over a job's
profile), ``store`` (the kit's ``QueueStore`` over the rows), ``records`` (the rows: claims,
heartbeats, outcomes), ``asgi`` (restoring jobs when the server starts).
"""

from .records import JobSettled, JobSpec, Outcome
from .registry import ProfileRegistry
from .service import (
    CONCURRENCY,
    HEARTBEAT_SECONDS,
    STALE_SECONDS,
    JobRequest,
    JobService,
    job_service,
    restore_jobs,
)
from .store import DatabaseQueueStore, HeldJobStore

__all__ = [
    "CONCURRENCY",
    "HEARTBEAT_SECONDS",
    "STALE_SECONDS",
    "DatabaseQueueStore",
    "HeldJobStore",
    "JobRequest",
    "JobService",
    "JobSettled",
    "JobSpec",
    "Outcome",
    "ProfileRegistry",
    "job_service",
    "restore_jobs",
]
