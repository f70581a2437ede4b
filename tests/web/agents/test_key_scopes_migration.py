"""Migration 0020: keys made before scopes existed keep all three; new ones read and run."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("agents", "0019_mcp_credentials_stdio")]
AFTER = [("agents", "0020_key_scopes")]


def test_existing_keys_keep_every_scope_and_new_ones_get_read_and_run():
    executor = MigrationExecutor(connection)
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(BEFORE)
    try:
        old_apps = executor.loader.project_state(BEFORE).apps
        user = old_apps.get_model("auth", "User").objects.create(username="old-timer")
        old_apps.get_model("agents", "ApiKey").objects.create(
            user_id=user.pk, name="old", prefix="oldkey01", digest="0" * 64
        )
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        new_apps = executor.loader.project_state(AFTER).apps
        keys = new_apps.get_model("agents", "ApiKey").objects
        old = keys.get(prefix="oldkey01")
        assert old.scopes.split() == ["read", "run", "keys"] and old.profiles == ""
        fresh = keys.create(user_id=user.pk, name="new", prefix="newkey01", digest="1" * 64)
        fresh.refresh_from_db()
        assert fresh.scopes.split() == ["read", "run"]
    finally:
        MigrationExecutor(connection).migrate(leaves)
