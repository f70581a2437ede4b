"""Authority policies and their ordered rules."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import models
from django.db.models import Q

from ..conditions import Matcher, compile_matcher, validate_conditions
from ..validators import (
    validate_glob,
)


class AuthorityPolicy(models.Model):
    """An ordered rule list consulted before each tool call, and what to do when none matches."""

    name = models.CharField("name", max_length=100, unique=True)
    fallback_allowed = models.BooleanField(
        "fallback allows",
        default=True,
        help_text="When no rule matches: allow (a denylist) or deny (an allowlist).",
    )
    fallback_zone = models.CharField("fallback zone", max_length=64, default="default")
    fallback_reason = models.CharField("fallback reason", max_length=255, blank=True)

    class Meta:
        verbose_name = "authority policy"
        verbose_name_plural = "authority policies"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(fallback_zone=""), name="agents_policy_fallback_zone_set"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class AuthorityRule(models.Model):
    """One rule of a policy: first match (by ``position``) decides the call."""

    policy = models.ForeignKey(
        AuthorityPolicy, on_delete=models.CASCADE, related_name="rules", verbose_name="policy"
    )
    position = models.PositiveIntegerField("position", help_text="Lower positions match first.")
    tool_glob = models.CharField(
        "tool pattern",
        max_length=200,
        validators=[validate_glob],
        help_text="A glob on the tool name, e.g. delete_* or *.",
    )
    conditions = models.JSONField(
        "conditions",
        default=dict,
        blank=True,
        validators=[validate_conditions],
        help_text='Argument tests, e.g. {"path": {"pattern": "^/etc/"}}; '
        "kinds: equals, in, pattern, exists.",
    )

    class Verdict(models.TextChoices):
        ALLOW = "allow", "allow"
        DENY = "deny", "deny"
        ASK = "ask", "ask a person"

    class Approver(models.TextChoices):
        OWNER = "owner", "the conversation's owner"
        STAFF = "staff", "an operator (in the admin)"

    zone = models.CharField("zone", max_length=64, default="default")
    verdict = models.CharField(
        "verdict",
        max_length=8,
        choices=Verdict.choices,
        default=Verdict.DENY,
        help_text="ask: the run pauses before the call until a person approves or denies it.",
    )
    approver = models.CharField(
        "approver",
        max_length=8,
        choices=Approver.choices,
        default=Approver.OWNER,
        help_text="Who decides a call this rule asks about.",
    )
    reason = models.CharField("reason", max_length=255, blank=True)

    class Meta:
        verbose_name = "authority rule"
        verbose_name_plural = "authority rules"
        ordering = ["policy", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["policy", "position"], name="agents_rule_policy_position_unique"
            ),
            models.CheckConstraint(condition=~Q(tool_glob=""), name="agents_rule_glob_set"),
            models.CheckConstraint(condition=~Q(zone=""), name="agents_rule_zone_set"),
            models.CheckConstraint(
                condition=Q(verdict__in=("allow", "deny", "ask")), name="agents_rule_verdict_known"
            ),
        ]

    def __str__(self) -> str:
        return f"#{self.position} {self.verdict} {self.tool_glob}"

    @property
    def allowed(self) -> bool:
        """Whether the rule lets a call run (an ``ask`` does, once a person approves)."""
        return self.verdict != self.Verdict.DENY

    @allowed.setter
    def allowed(self, value: bool) -> None:
        self.verdict = self.Verdict.ALLOW if value else self.Verdict.DENY

    @property
    def asks(self) -> bool:
        """Whether a call this rule matches waits for a person's decision."""
        return self.verdict == self.Verdict.ASK

    def matcher(self) -> Matcher:
        """This rule's test of a call, compiled. A pattern that runs out of time on the
        model's arguments fails closed: a rule that denies or asks applies, one that allows
        does not."""
        restricts = not self.allowed or self.asks
        return compile_matcher(self.tool_glob, self.conditions or {}, on_timeout=restricts)

    def matches(self, name: str, arguments: Mapping[str, Any]) -> bool:
        """Whether this rule applies to a call of tool ``name`` with ``arguments``."""
        return self.matcher()(name, arguments)
