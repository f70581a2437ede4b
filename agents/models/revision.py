"""One value that changes whenever any agent configuration changes (the profile cache's key)."""

from __future__ import annotations

import secrets

from django.db import models
from django.db.models import Subquery

from orkestrel.statements import Names

__all__ = [
    "ConfigRevision",
    "bump_config_revision",
    "config_revision_sql",
    "config_revision_subquery",
]

SINGLETON = 1


class ConfigRevision(models.Model):
    """A single row whose ``value`` changes with every configuration write, in any process.

    A fresh random value, not a counter: after a rolled-back write a counter would return to
    a value some process may have cached for the state that was rolled back.
    """

    value = models.BigIntegerField("value", default=0)

    class Meta:
        verbose_name = "configuration revision"

    def __str__(self) -> str:
        return f"revision {self.value}"


def bump_config_revision() -> None:
    """Invalidate every process's cached profile configuration (inside the caller's transaction)."""
    value = secrets.randbits(62)
    if not ConfigRevision.objects.filter(pk=SINGLETON).update(value=value):
        ConfigRevision.objects.update_or_create(pk=SINGLETON, defaults={"value": value})


def config_revision_subquery() -> Subquery:
    """The current revision as a subquery, to ride along with another query at no extra trip."""
    return Subquery(ConfigRevision.objects.filter(pk=SINGLETON).values("value")[:1])


def config_revision_sql(n: Names) -> str:
    """``config_revision_subquery`` in fixed SQL (``orkestrel.statements``)."""
    return (
        f"(SELECT {n.column(ConfigRevision, 'value')} FROM {n.table(ConfigRevision)} "
        f"WHERE {n.column(ConfigRevision, 'id')} = {SINGLETON})"
    )
