"""Shared by the Django tests: agent jobs run in the test's own process; a loopback model
server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.providers.server import StubServer


@pytest.fixture(autouse=True)
def jobs_in_this_process(settings) -> None:
    """No worker serves the suite's own jobs, even with ``CELERY_BROKER_URL`` set: the worker
    tests (``jobs/test_celery_workers.py``) serve the project from processes of their own."""
    settings.ORKESTREL = {**settings.ORKESTREL, "JOBS_ON": "process"}


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A loopback model server speaking the providers' real wire protocols; script it with
    ``stub.enqueue(reply(...))`` and read what the app sent from ``stub.requests``."""
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()
