"""Shared by the Django tests: agent jobs run in the test's own process."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def jobs_in_this_process(settings) -> None:
    """No worker serves the suite's own jobs, even with ``CELERY_BROKER_URL`` set: the worker
    tests (``jobs/test_celery_workers.py``) serve the project from processes of their own."""
    settings.ORKESTREL = {**settings.ORKESTREL, "JOBS_ON": "process"}
