"""The authority gate: a synchronous policy consulted before each tool call runs.

Rules are ordered, first match wins; a matched rule allows unless its ``allowed`` is ``False``.
No match returns the fallback (allow by default: a rules list of denials is a denylist; a
denying fallback turns the gate into an allowlist). A matcher that raises fails closed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .constants import DEFAULT_AUTHORITY_ZONE
from .messages import ToolCall, to_tool_call

__all__ = [
    "Authority",
    "AuthorityContext",
    "AuthorityDecision",
    "AuthorityMatcher",
    "AuthorityRule",
    "create_authority",
]


@dataclass(frozen=True, slots=True)
class AuthorityContext:
    """What a rule's matcher sees for one tool call."""

    call: ToolCall


AuthorityMatcher = Callable[[AuthorityContext], bool]


@dataclass(frozen=True, slots=True)
class AuthorityDecision:
    """The verdict on one tool call.

    Attributes:
        zone: The project's classification of the call (``"default"`` for the built-in fallback).
        allowed: Whether the call may run.
        reason: Why, when the rule (or fallback) says so.
        rule: Index of the deciding rule, ``None`` when the fallback decided.
    """

    zone: str
    allowed: bool
    reason: str | None = None
    rule: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.zone, str):
            raise TypeError("authority decision zone must be a string")
        if not isinstance(self.allowed, bool):
            raise TypeError("authority decision allowed must be a bool")
        if self.reason is not None and not isinstance(self.reason, str):
            raise TypeError("authority decision reason must be a string")


@dataclass(frozen=True, slots=True)
class AuthorityRule:
    """One ordered rule: when ``match(context)`` is true it decides (allowed unless ``False``)."""

    match: AuthorityMatcher
    zone: str
    allowed: bool | None = None
    reason: str | None = None

    def __post_init__(self) -> None:
        if not callable(self.match):
            raise TypeError("authority rule match must be callable")
        if not isinstance(self.zone, str):
            raise TypeError("authority rule zone must be a string")
        if self.allowed is not None and not isinstance(self.allowed, bool):
            raise TypeError("authority rule allowed must be a bool")
        if self.reason is not None and not isinstance(self.reason, str):
            raise TypeError("authority rule reason must be a string")


AuthorityRuleInput = AuthorityRule | Mapping[str, Any]
AuthorityDecisionInput = AuthorityDecision | Mapping[str, Any]

_DEFAULT_FALLBACK = AuthorityDecision(DEFAULT_AUTHORITY_ZONE, True)


def _to_rule(value: AuthorityRuleInput) -> AuthorityRule:
    if isinstance(value, AuthorityRule):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"authority rule must be a mapping, not {type(value).__name__}")
    if "match" not in value or "zone" not in value:
        raise TypeError("authority rule needs match and zone")
    return AuthorityRule(value["match"], value["zone"], value.get("allowed"), value.get("reason"))


def _to_decision(value: AuthorityDecisionInput) -> AuthorityDecision:
    if isinstance(value, AuthorityDecision):
        # The fallback never names a rule, whatever the caller passed.
        return AuthorityDecision(value.zone, value.allowed, value.reason)
    if not isinstance(value, Mapping):
        raise TypeError(f"authority fallback must be a mapping, not {type(value).__name__}")
    if "zone" not in value or "allowed" not in value:
        raise TypeError("authority fallback needs zone and allowed")
    return AuthorityDecision(value["zone"], value["allowed"], value.get("reason"))


def _to_context(value: AuthorityContext | ToolCall | Mapping[str, Any]) -> AuthorityContext:
    if isinstance(value, AuthorityContext):
        return value
    if isinstance(value, ToolCall):
        return AuthorityContext(value)
    if isinstance(value, Mapping):
        # ``{"call": {...}}`` is a context; anything else is read as the call itself.
        return AuthorityContext(to_tool_call(value.get("call", value)))
    raise TypeError(f"authority context must be a context or a tool call, not {value!r}")


def _message(error: BaseException) -> str:
    try:
        return str(error) or type(error).__name__
    except Exception:  # noqa: BLE001 - a broken __str__ must not break the gate
        return type(error).__name__


class Authority:
    """The synchronous policy gate: ordered first-match-wins rules plus a fallback."""

    __slots__ = ("_fallback", "_rules")

    def __init__(
        self,
        rules: Sequence[AuthorityRuleInput] | None = None,
        fallback: AuthorityDecisionInput | None = None,
    ) -> None:
        if rules is not None and (isinstance(rules, str) or not isinstance(rules, Sequence)):
            raise TypeError("authority rules must be a list")
        self._rules: tuple[AuthorityRule, ...] = tuple(_to_rule(rule) for rule in rules or ())
        self._fallback = _DEFAULT_FALLBACK if fallback is None else _to_decision(fallback)

    @property
    def rules(self) -> tuple[AuthorityRule, ...]:
        """The ordered rules."""
        return self._rules

    @property
    def fallback(self) -> AuthorityDecision:
        """The decision when no rule matches."""
        return self._fallback

    def evaluate(
        self, context: AuthorityContext | ToolCall | Mapping[str, Any]
    ) -> AuthorityDecision:
        """Decide one tool call: the first matching rule's verdict, else the fallback.

        Accepts an ``AuthorityContext``, a bare ``ToolCall``, or their mapping forms. A matcher
        that raises denies the call (``reason`` names the rule) rather than propagating.
        """
        subject = _to_context(context)
        for index, rule in enumerate(self._rules):
            try:
                matched = bool(rule.match(subject))
            except Exception as error:  # noqa: BLE001 - a broken policy must fail closed
                return AuthorityDecision(
                    rule.zone, False, f"authority rule {index} failed: {_message(error)}", index
                )
            if matched:
                return AuthorityDecision(rule.zone, rule.allowed is not False, rule.reason, index)
        return self._fallback


def create_authority(
    rules: Sequence[AuthorityRuleInput] | None = None,
    fallback: AuthorityDecisionInput | None = None,
) -> Authority:
    """Create an ``Authority``; ``fallback`` defaults to allow in zone ``"default"``."""
    return Authority(rules, fallback)
