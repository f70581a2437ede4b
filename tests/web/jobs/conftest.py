"""Fixtures for the job service: users, the offline demo profile, services playing processes.

Every service made here is shut down with its test (its loop ends with the test), and so is
the process-wide ``job_service``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.utils import timezone

from agents.jobs import JobService, job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentJob, AgentProfile


@pytest.fixture
def user(db) -> AbstractBaseUser:
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def other(db) -> AbstractBaseUser:
    return get_user_model().objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def demo(db, settings) -> AgentProfile:
    """The offline demo profile, without its per-word delay."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    profile = ensure_demo_profile()
    assert profile is not None
    return profile


@pytest.fixture
def slow(demo, settings) -> AgentProfile:
    """The demo profile, answering a word every 20 ms (a job that runs for a second)."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    return demo


def scripted_profile(slug: str, **fields) -> AgentProfile:
    """Another profile, on the demo endpoint unless ``model`` says (``ensure_demo_profile``
    first)."""
    fields.setdefault("model", "demo/echo")
    profile = AgentProfile(slug=slug, name=slug, **fields)
    profile.full_clean()
    profile.save()
    return profile


@pytest.fixture
async def services() -> AsyncIterator[Callable[..., JobService]]:
    """``services(owner, **options)``: a job service playing one server process."""
    made: list[JobService] = []

    def make(owner: str, **options) -> JobService:
        options.setdefault("heartbeat", 0.05)
        options.setdefault("stale", 1.0)
        service = JobService(owner=owner, **options)
        made.append(service)
        return service

    yield make
    for service in made:
        await service.shutdown()
    await job_service.shutdown()


async def until_running(job_id) -> AgentJob:
    """Wait until the job's row says it is running (its start's database hop landed)."""
    async with asyncio.timeout(10):
        while True:
            row = await sync_to_async(AgentJob.objects.get)(pk=job_id)
            if row.status == AgentJob.Status.RUNNING:
                return row
            await asyncio.sleep(0.01)


@pytest.fixture
def left_by() -> Callable[..., AgentJob]:
    """``left_by(owner, user, profile, status=..., age=...)``: a job row another process holds,
    its heartbeat ``age`` seconds old (a dead process's when older than the staleness)."""

    def make(
        owner: str,
        user: AbstractBaseUser,
        profile: AgentProfile,
        *,
        content: str = "left behind",
        status: str = AgentJob.Status.RUNNING,
        age: float = 60.0,
        **fields,
    ) -> AgentJob:
        now = timezone.now()
        started = now - timedelta(seconds=age) if status == AgentJob.Status.RUNNING else None
        return AgentJob.objects.create(
            user=user,
            profile=profile,
            job={"provider": profile.slug, "messages": [{"role": "user", "content": content}]},
            status=status,
            attempts=1 if status == AgentJob.Status.RUNNING else 0,
            owner=owner,
            heartbeat=now - timedelta(seconds=age),
            started=started,
            **fields,
        )

    return make
