"""Shared by the Django tests: agent jobs run in the test's own process; a loopback model
server, and a profile whose model it plays."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import SyncToAsync
from channels.layers import channel_layers
from django.db import connections

from agents.jobs import job_service
from agents.models import AgentProfile, ProviderEndpoint, Tool
from conversations.models import Conversation
from orkestrel.db import shared_lanes
from tests.providers.server import StubServer


@pytest.fixture(autouse=True)
def jobs_in_this_process(settings) -> None:
    """No worker serves the suite's own jobs, even with ``CELERY_BROKER_URL`` set: the worker
    tests (``jobs/test_celery_workers.py``) serve the project from processes of their own."""
    settings.ORKESTREL = {**settings.ORKESTREL, "JOBS_ON": "process"}


@pytest.fixture(autouse=True)
def database_thread_idle() -> Iterator[None]:
    """After a test, wait for the database thread's work in flight before the database is
    emptied: a sweep a run start began (``Sweeper``) may still be reading when the test ends,
    and on PostgreSQL a query that joins tables can deadlock with the flush's ``TRUNCATE``.

    Autouse fixtures set up after pytest-django's own, so this one is torn down before the
    flush; the test's event loop runs no more of its tasks by then, so nothing new is queued.
    """
    yield
    SyncToAsync.single_thread_executor.submit(lambda: None).result(timeout=60)
    # And for the lanes' (PostgreSQL): a hop still in flight after the test database's pool
    # is closed, at the end of the session, would open a new pool on it.
    if (lanes := shared_lanes()) is not None:
        lanes.close()


@pytest.fixture(autouse=True)
def fresh_channel_layer() -> Iterator[None]:
    """A channel layer per test: each test has its own event loop, and channels-redis keeps
    loop-bound locks inside a layer instance."""
    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


@pytest.fixture(scope="session", autouse=True)
def database_thread_closes(django_db_setup, django_db_blocker) -> Iterator[None]:
    """At the end, close the database thread's connections, so the test database can be
    dropped (PostgreSQL refuses while another session is connected)."""
    yield
    with django_db_blocker.unblock():
        SyncToAsync.single_thread_executor.submit(connections.close_all).result(timeout=60)


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A loopback model server speaking the providers' real wire protocols; script it with
    ``stub.enqueue(reply(...))`` and read what the app sent from ``stub.requests``."""
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def editor(stub: StubServer) -> Callable[..., AgentProfile]:
    """``editor(**fields)``: the ``editor`` profile, with the workspace tool, on a model the
    ``stub`` server plays (the OpenAI wire); ``fields`` set more (an authority policy)."""

    def make(**fields: Any) -> AgentProfile:
        ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=f"{stub.url}/v1")
        profile = AgentProfile.objects.create(
            slug="editor", name="Editor", model="stub/m", **fields
        )
        profile.tools.set([Tool.objects.create(name="workspace", kind="builtin")])
        return profile

    return make


@pytest.fixture
async def quick_jobs(settings, monkeypatch) -> AsyncIterator[None]:
    """The process's job service with quick heartbeats and quick looks at running children
    (the test waits for them); stopped with the test."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DELEGATE_PROGRESS_SECONDS": 0.05}
    monkeypatch.setattr(job_service, "heartbeat", 0.05)
    yield
    await job_service.shutdown()


@pytest.fixture
def delegating(stub: StubServer) -> Callable[[Any], Conversation]:
    """``delegating(owner)``: a conversation on ``lead``, whose profile may delegate to
    ``helper``; both on the ``stub`` server."""

    def make(owner: Any) -> Conversation:
        endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url=stub.url)
        tool = Tool.objects.create(name="delegate", kind=Tool.Kind.BUILTIN, timeout=60.0)
        lead = AgentProfile.objects.create(slug="lead", name="Lead", model=f"{endpoint.name}/m")
        helper = AgentProfile.objects.create(
            slug="helper", name="Helper", model=f"{endpoint.name}/m"
        )
        lead.tools.add(tool)
        lead.may_delegate_to.add(helper)
        return Conversation.objects.create(owner=owner, title="Delegating", profile=lead)

    return make
