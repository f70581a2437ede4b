"""The database settings: PostgreSQL connections pooled, since under ASGI each request's sync
view runs in a thread of its own and a per-thread connection never outlives its request."""

from __future__ import annotations

import os
import secrets
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection

from orkestrel.db import in_thread

from .test_settings_deploy import _environment, _settings

POSTGRES = "postgres://orkestrel@db.example.com:5432/orkestrel"


def _database(tmp_path: Path, **variables: str) -> dict[str, object]:
    env = _environment(tmp_path, SECRET_KEY=secrets.token_urlsafe(50), **variables)
    env.pop("CONN_MAX_AGE", None)
    databases = _settings(env, "DATABASES")["DATABASES"]
    assert isinstance(databases, dict)
    return databases["default"]


def test_postgresql_connections_come_from_a_pool_sized_by_the_environment(tmp_path):
    default = _database(tmp_path, DATABASE_URL=POSTGRES, DATABASE_POOL_MAX="8")
    assert default["OPTIONS"] == {"pool": {"min_size": 2, "max_size": 8, "timeout": 30.0}}
    # Django refuses persistent connections beside its pool.
    assert default["CONN_MAX_AGE"] == 0


def test_the_pool_can_be_turned_off_for_persistent_connections(tmp_path):
    default = _database(tmp_path, DATABASE_URL=POSTGRES, DATABASE_POOL="false")
    assert "pool" not in default.get("OPTIONS", {})
    assert default["CONN_MAX_AGE"] == 60


def test_sqlite_has_no_pool(tmp_path):
    default = _database(tmp_path)
    assert "pool" not in default["OPTIONS"]


def _backend_pid() -> int:
    # What a request's thread does: connect, query, and close at the request's end.
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_backend_pid()")
            return int(cursor.fetchone()[0])
    finally:
        connection.close()


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs PostgreSQL: set DATABASE_URL",
)
@pytest.mark.django_db(transaction=True)
def test_request_threads_reuse_the_pools_server_connections():
    pids = set()
    for _ in range(20):
        with ThreadPoolExecutor(1) as request_thread:
            pids.add(request_thread.submit(_backend_pid).result())
    # Without the pool, each thread's connection was a new server process: 20 of them.
    assert len(pids) <= connection.pool.get_stats()["pool_size"] < 20


def _backend_pid_kept() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _pool_checkouts() -> int:
    return int(connection.pool.get_stats().get("requests_num", 0))


@pytest.mark.skipif(
    not os.environ.get("DATABASE_URL", "").startswith("postgres"),
    reason="needs PostgreSQL: set DATABASE_URL",
)
@pytest.mark.django_db(transaction=True)
async def test_the_database_thread_keeps_one_pooled_connection_across_hops():
    # Every run's hops share that thread: one checkout, not one per hop.
    hop = in_thread(_backend_pid_kept)
    pids = {await hop()}
    before = await in_thread(_pool_checkouts)()
    for _ in range(20):
        pids.add(await hop())
    assert await in_thread(_pool_checkouts)() == before
    assert len(pids) == 1
