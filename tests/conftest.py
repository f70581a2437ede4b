"""Shared test configuration."""

import os
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.db.backends.postgresql.operations import DatabaseOperations as PostgresOperations
from hypothesis import HealthCheck, settings

# CI runs on 2 cores next to PostgreSQL and Redis: keep property tests bounded and deadline-free.
settings.register_profile(
    "orkestrel",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("orkestrel")


def _flush_by_delete(
    self: PostgresOperations,
    style: Any,
    tables: list[str],
    *,
    reset_sequences: bool = False,
    allow_cascade: bool = False,
) -> list[str]:
    """Empty the tables after a test with ``DELETE``, not Django's ``TRUNCATE``.

    ``TRUNCATE`` gives each table new files: about 0.25 s for this schema after every
    database test that commits (hundreds of them: a sixth of the suite's time on PostgreSQL).
    The tables hold a test's few rows, which ``DELETE`` removes in milliseconds; Django's
    foreign keys are deferred, so the order does not matter inside ``flush``'s transaction.
    """
    if reset_sequences or not tables:
        return TRUNCATE(
            self, style, tables, reset_sequences=reset_sequences, allow_cascade=allow_cascade
        )
    return [f"DELETE FROM {self.quote_name(table)};" for table in tables]


TRUNCATE = PostgresOperations.sql_flush
PostgresOperations.sql_flush = _flush_by_delete  # type: ignore[method-assign]

# Redis databases one pytest-xdist worker uses (the channel layer's and the broker's).
REDIS_DATABASES_PER_WORKER = 2


def redis_database(url: str, shift: int) -> str:
    """``url`` (a ``redis://`` URL) pointing ``shift`` databases further along."""
    parts = urlsplit(url)
    current = int(parts.path.strip("/") or 0)
    return parts._replace(path=f"/{current + shift}").geturl()


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_setupnodes(config: pytest.Config, specs: list) -> None:
    """`make test` runs the suite on pytest-xdist workers: give each its own Redis databases.

    Each worker has a test database of its own, so two workers make the same conversation
    ids; in one channel layer their groups would meet. The servers and workers a test starts
    inherit the worker's environment, so they keep to its databases too.
    """
    for index, spec in enumerate(specs):
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            url = os.environ.get(name, "")
            if url.startswith(("redis://", "rediss://")):
                spec.env[name] = redis_database(url, index * REDIS_DATABASES_PER_WORKER)


# Browser-package files that run on a worker of their own rather than with the package.
OWN_GROUP = frozenset(
    {
        "tests/e2e/test_crash_mid_run.py",
        "tests/e2e/test_two_processes.py",
    }
)
# The browser package's other files are dealt to this many groups, each on one worker with one
# server and one browser: the package is the suite's largest block, too long for one worker.
BROWSER_GROUPS = 3
# The longest blocks of work, longest first (measured with ``--durations=0``): xdist starts them
# first, so no worker is left with one of them while the others have nothing to do. (Its own
# order, by a block's number of tests, would start the Celery files, a few long tests each, last:
# ``make test`` passes ``--no-loadscope-reorder``.)
LONGEST_FIRST = (
    "tests/e2e#",
    "tests/web/jobs/test_celery_workers.py",
    "tests/web/api/test_schemathesis.py",
    "tests/web/jobs/test_celery_runs.py",
    "tests/e2e/test_crash_mid_run.py",
    "tests/web/jobs/test_celery_queued_stop.py",
    "tests/web/agents/test_add_mcp_server.py",
    "tests/web/jobs/test_celery_delegation.py",
    "tests/e2e/test_two_processes.py",
    "tests/web/runtime/test_mcp_tools.py",
    "tests/test_readme_quickstart.py",
    "tests/web/jobs/test_celery_progress.py",
    "tests/web/agents/test_provider_faults.py",
    "tests/web/jobs/test_celery_telemetry.py",
    "tests/web/runtime/test_mcp_user_credentials.py",
    "tests/web/test_settings_deploy.py",
    "tests/web/test_up.py",
)


def _rank(group: str) -> int:
    """Where a block starts: the longest first, the rest after them in collection order."""
    return next(
        (rank for rank, prefix in enumerate(LONGEST_FIRST) if group.startswith(prefix)),
        len(LONGEST_FIRST),
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Keep what shares expensive fixtures on one xdist worker (``--dist loadgroup``).

    Every file keeps its module's fixtures (the Celery workers a module starts) on one worker;
    the browser package's files are dealt, in order, to ``BROWSER_GROUPS`` groups, each sharing
    one server and browser (a worker that left the package and came back would start both
    again), and the two files that start servers of their own run apart. ``tryfirst``: xdist
    reads the groups in its own hook, which would otherwise run before this one.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    browser_files = sorted(
        {
            item.nodeid.split("::", 1)[0]
            for item in items
            if item.nodeid.startswith("tests/e2e/")
            and item.nodeid.split("::", 1)[0] not in OWN_GROUP
        }
    )
    dealt = {path: f"tests/e2e#{i % BROWSER_GROUPS}" for i, path in enumerate(browser_files)}
    groups: dict[str, str] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        groups[item.nodeid] = dealt.get(path, path)
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid]))
    items.sort(key=lambda item: _rank(groups[item.nodeid]))  # stable: in-file order is kept
