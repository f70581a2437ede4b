"""Authority: ordered first-match-wins rules, fallback, fail-closed matchers."""

from __future__ import annotations

import pytest

from orkestrel.core import (
    DEFAULT_AUTHORITY_ZONE,
    Authority,
    AuthorityContext,
    AuthorityDecision,
    AuthorityRule,
    ToolCall,
    create_authority,
)


def call(name: str, **arguments: object) -> ToolCall:
    return ToolCall("1", name, arguments)


def test_first_matching_rule_wins_in_order() -> None:
    authority = create_authority(
        rules=[
            {"match": lambda c: c.call.name.startswith("d"), "zone": "first", "allowed": False},
            {"match": lambda c: c.call.name == "delete", "zone": "second"},
        ]
    )
    decision = authority.evaluate(call("delete"))
    assert decision.zone == "first"
    assert decision.allowed is False
    assert decision.rule == 0


def test_matched_rule_allows_by_default() -> None:
    authority = create_authority(rules=[{"match": lambda c: True, "zone": "read"}])
    assert authority.evaluate(call("search")) == AuthorityDecision("read", True, None, 0)


def test_matched_rule_denies_on_allowed_false_carrying_zone_and_reason() -> None:
    authority = create_authority(
        rules=[
            {"match": lambda c: c.call.name == "add", "zone": "math"},
            {
                "match": lambda c: c.call.name == "delete",
                "zone": "restricted",
                "allowed": False,
                "reason": "read-only mode",
            },
        ]
    )
    assert authority.evaluate(call("delete")) == AuthorityDecision(
        "restricted", False, "read-only mode", 1
    )


def test_no_match_returns_the_fallback_with_no_rule_index() -> None:
    authority = create_authority(
        rules=[{"match": lambda c: False, "zone": "never"}],
        fallback={"zone": "other", "allowed": True, "reason": "unmatched"},
    )
    decision = authority.evaluate(call("x"))
    assert decision == AuthorityDecision("other", True, "unmatched")
    assert decision.rule is None


def test_default_fallback_is_allow_in_the_default_zone() -> None:
    decision = create_authority().evaluate(call("anything"))
    assert decision == AuthorityDecision(DEFAULT_AUTHORITY_ZONE, True)
    assert decision.zone == "default"


def test_empty_rules_always_return_the_fallback() -> None:
    fallback = AuthorityDecision("custom", False, "closed")
    authority = create_authority(rules=[], fallback=fallback)
    for name in ("a", "b", "c"):
        assert authority.evaluate(call(name)) == fallback


def test_deny_by_default_fallback_turns_the_gate_into_an_allowlist() -> None:
    authority = create_authority(
        rules=[{"match": lambda c: c.call.name == "search", "zone": "read"}],
        fallback={"zone": "blocked", "allowed": False, "reason": "not allowlisted"},
    )
    assert authority.evaluate(call("search")).allowed is True
    denied = authority.evaluate(call("delete"))
    assert denied.allowed is False
    assert denied.reason == "not allowlisted"


def test_matcher_receives_the_call_context_and_can_branch_on_arguments() -> None:
    seen: list[AuthorityContext] = []

    def match(context: AuthorityContext) -> bool:
        seen.append(context)
        return context.call.name == "delete" and context.call.arguments.get("id") == 42

    authority = create_authority(rules=[{"match": match, "zone": "danger", "allowed": False}])
    assert authority.evaluate(call("delete", id=42)).allowed is False
    assert authority.evaluate(call("delete", id=7)).allowed is True
    assert authority.evaluate(call("add", id=42)).allowed is True
    assert isinstance(seen[0], AuthorityContext)
    assert seen[0].call == call("delete", id=42)


def test_evaluate_accepts_a_context_a_bare_call_and_the_mapping_forms() -> None:
    authority = create_authority(
        rules=[{"match": lambda c: c.call.name == "add", "zone": "math", "allowed": False}]
    )
    bare = call("add")
    forms: list[object] = [
        AuthorityContext(bare),
        bare,
        {"call": {"id": "1", "name": "add", "arguments": {}}},
        {"call": bare},
        {"id": "1", "name": "add", "arguments": {}},
    ]
    for form in forms:
        assert authority.evaluate(form).zone == "math"  # type: ignore[arg-type]


def test_a_raising_matcher_fails_closed_without_propagating() -> None:
    def broken(context: AuthorityContext) -> bool:
        raise RuntimeError("policy exploded")

    authority = create_authority(
        rules=[{"match": lambda c: False, "zone": "z0"}, {"match": broken, "zone": "z1"}]
    )
    decision = authority.evaluate(call("anything"))
    assert decision.allowed is False
    assert decision.reason == "authority rule 1 failed: policy exploded"
    assert decision.rule == 1


def test_a_raising_matcher_after_a_match_is_never_reached() -> None:
    def broken(context: AuthorityContext) -> bool:
        raise RuntimeError("never")

    authority = create_authority(
        rules=[{"match": lambda c: True, "zone": "ok"}, {"match": broken, "zone": "bad"}]
    )
    assert authority.evaluate(call("x")).allowed is True


def test_create_authority_accepts_dataclass_rules_and_fallback() -> None:
    rule = AuthorityRule(lambda c: c.call.name == "x", "zone-x", allowed=False, reason="no")
    authority = create_authority(rules=[rule], fallback=AuthorityDecision("fb", False))
    assert isinstance(authority, Authority)
    assert authority.rules == (rule,)
    assert authority.evaluate(call("x")) == AuthorityDecision("zone-x", False, "no", 0)
    assert authority.evaluate(call("y")) == AuthorityDecision("fb", False)


def test_rules_are_copied_so_later_caller_mutation_does_not_leak_in() -> None:
    rules = [{"match": lambda c: True, "zone": "a"}]
    authority = create_authority(rules=rules)
    rules.append({"match": lambda c: True, "zone": "b"})
    assert len(authority.rules) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rules": [{"zone": "z"}]}, "match"),
        ({"rules": [{"match": "nope", "zone": "z"}]}, "match"),
        ({"rules": [{"match": lambda c: True, "zone": 1}]}, "zone"),
        ({"rules": [{"match": lambda c: True, "zone": "z", "allowed": "no"}]}, "allowed"),
        ({"rules": "not a list"}, "rules"),
        ({"fallback": {"zone": "z"}}, "allowed"),
        ({"fallback": {"zone": "z", "allowed": 1}}, "allowed"),
    ],
)
def test_create_authority_rejects_bad_configuration(kwargs: dict, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        create_authority(**kwargs)
