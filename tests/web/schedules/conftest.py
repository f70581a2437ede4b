"""Fixtures for schedules: users, the offline demo profile, a schedule maker; every job the
tests start runs on the test's loop and the job service stops with the test."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser

from agents.jobs import job_service
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, Schedule


@pytest.fixture
def user(db) -> AbstractBaseUser:
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def demo(db, settings) -> AgentProfile:
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    profile = ensure_demo_profile()
    assert profile is not None
    return profile


@pytest.fixture(autouse=True)
async def stop_jobs():
    yield
    await job_service.shutdown()


@pytest.fixture
def make_schedule(user, demo) -> Callable[..., Schedule]:
    """``make_schedule(now, **fields)``: a saved schedule of ``user`` on the demo profile,
    planned from ``now``."""

    def make(now: datetime, **fields) -> Schedule:
        fields.setdefault("user", user)
        fields.setdefault("profile", demo)
        fields.setdefault("name", "digest")
        fields.setdefault("prompt", "Say hello")
        fields.setdefault("cron", "0 9 * * *")
        fields.setdefault("timezone", "Europe/Lisbon")
        schedule = Schedule(**fields)
        schedule.full_clean()
        schedule.plan(now)
        schedule.save()
        return schedule

    return make
