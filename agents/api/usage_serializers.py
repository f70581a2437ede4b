"""The shapes of ``/api/usage/``: totals over a span, its groups, and where the quotas stand."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from .serializers import UsageSerializer

__all__ = ["LedgerUsageSerializer", "QuotaStandingSerializer", "UsageGroupSerializer"]


class UsageGroupSerializer(serializers.Serializer[Any]):
    """The usage of one day, profile, model or API key."""

    key = serializers.CharField(
        allow_null=True,
        help_text="The day (`2026-12-06`, UTC), the profile's slug, the `<endpoint>/<model>`, "
        "or the API key's id (null: work started without a key, in the browser).",
    )
    name = serializers.CharField(
        required=False, help_text="With `group_by=key`: the key's name (kept after it is gone)."
    )
    usage = UsageSerializer()


class QuotaStandingSerializer(serializers.Serializer[Any]):
    """A quota that applies to you, and what remains of it this period."""

    subject = serializers.ChoiceField(["user", "group", "key"])
    name = serializers.CharField(help_text="The user's, group's or API key's name.")
    period = serializers.ChoiceField(["day", "week", "month"], help_text="Calendar, in UTC.")
    action = serializers.ChoiceField(
        ["block", "warn"], help_text="Once used up: refuse new runs and jobs, or warn."
    )
    limit = serializers.DictField(
        help_text="`tokens` (an integer) and `cost` (USD, a decimal string); null: no limit."
    )
    used = serializers.DictField(help_text="`tokens` and `cost` used this period.")
    remaining = serializers.DictField(help_text="`tokens` and `cost` left (null: no limit).")
    resets_at = serializers.DateTimeField(help_text="When the next period begins.")


class LedgerUsageSerializer(serializers.Serializer[Any]):
    """Your usage from the ledger (runs, jobs and summaries; deleting a conversation keeps
    it), over all time or ``since``..``until``."""

    usage = UsageSerializer()
    conversations = serializers.IntegerField(help_text="How many conversations you hold.")
    since = serializers.DateTimeField(allow_null=True)
    until = serializers.DateTimeField(allow_null=True, help_text="Exclusive.")
    groups = UsageGroupSerializer(
        many=True, required=False, help_text="With `group_by`: the usage per group."
    )
    quotas = QuotaStandingSerializer(many=True)
