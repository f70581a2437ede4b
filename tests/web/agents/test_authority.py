"""compile_policy and evaluate_policy: rows in position order become the kit's gate."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agents.authority import compile_policy, evaluate_policy
from agents.models import AuthorityPolicy, AuthorityRule
from orkestrel.core import Authority, AuthorityContext, ToolCall

pytestmark = pytest.mark.django_db


@pytest.fixture
def policy() -> AuthorityPolicy:
    """Rules saved out of order: position, not insertion, decides which is first."""
    guard = AuthorityPolicy.objects.create(name="guard", fallback_zone="open")
    AuthorityRule.objects.create(
        policy=guard, position=20, tool_glob="*", zone="catch-all", allowed=False, reason="late"
    )
    AuthorityRule.objects.create(
        policy=guard,
        position=10,
        tool_glob="write_*",
        conditions={"path": {"pattern": "^/tmp/"}},
        zone="scratch",
        allowed=True,
        reason="scratch space",
    )
    AuthorityRule.objects.create(
        policy=guard, position=5, tool_glob="read_*", zone="read", allowed=True
    )
    return guard


def call(name: str, **arguments) -> ToolCall:
    return ToolCall("c1", name, arguments)


def test_compiled_policy_is_the_kits_authority(policy):
    assert isinstance(compile_policy(policy), Authority)
    assert len(compile_policy(policy).rules) == 3


def test_first_matching_rule_by_position_wins(policy):
    authority = compile_policy(policy)
    allowed = authority.evaluate(AuthorityContext(call("write_file", path="/tmp/x")))
    assert (allowed.allowed, allowed.zone, allowed.reason, allowed.rule) == (
        True,
        "scratch",
        "scratch space",
        1,
    )
    denied = authority.evaluate(AuthorityContext(call("write_file", path="/etc/x")))
    assert (denied.allowed, denied.zone, denied.reason) == (False, "catch-all", "late")
    reading = authority.evaluate(call("read_file", path="/etc/x"))
    assert (reading.allowed, reading.zone, reading.rule) == (True, "read", 0)


def test_policy_without_a_match_uses_its_fallback():
    open_policy = AuthorityPolicy.objects.create(name="denylist", fallback_zone="open")
    AuthorityRule.objects.create(policy=open_policy, position=1, tool_glob="delete_*")
    decision = compile_policy(open_policy).evaluate(call("read_file"))
    assert (decision.allowed, decision.zone, decision.rule, decision.reason) == (
        True,
        "open",
        None,
        None,
    )
    closed = AuthorityPolicy.objects.create(
        name="allowlist", fallback_allowed=False, fallback_zone="closed", fallback_reason="no"
    )
    decision = compile_policy(closed).evaluate(call("read_file"))
    assert (decision.allowed, decision.zone, decision.reason) == (False, "closed", "no")


def test_on_decision_sees_every_decision_with_its_rule(policy):
    seen = []
    authority = compile_policy(policy, on_decision=lambda *args: seen.append(args))
    authority.evaluate(AuthorityContext(call("write_file", path="/tmp/x")))
    authority.evaluate(AuthorityContext(call("delete_file")))
    authority.evaluate({"call": {"id": "c9", "name": "read_file", "arguments": {}}})
    assert [(c.name, d.allowed, r.position if r else None) for c, d, r in seen] == [
        ("write_file", True, 10),
        ("delete_file", False, 20),
        ("read_file", True, 5),
    ]
    assert all(isinstance(c, ToolCall) for c, _, _ in seen)


def test_on_decision_reports_fallback_with_no_rule():
    empty = AuthorityPolicy.objects.create(name="empty", fallback_allowed=False)
    seen = []
    compile_policy(empty, on_decision=lambda *args: seen.append(args)).evaluate(call("x"))
    assert len(seen) == 1
    assert seen[0][1].allowed is False and seen[0][2] is None


def test_a_failing_decision_hook_does_not_change_the_verdict(policy, caplog):
    def broken(*_args):
        raise RuntimeError("recorder down")

    decision = compile_policy(policy, on_decision=broken).evaluate(call("delete_file"))
    assert decision.allowed is False and decision.zone == "catch-all"
    assert "decision hook failed" in caplog.text


def test_evaluating_runs_no_queries(policy):
    authority = compile_policy(policy)
    with CaptureQueriesContext(connection) as queries:
        for _ in range(5):
            authority.evaluate(call("write_file", path="/tmp/x"))
    assert len(queries) == 0


def test_compiled_policy_is_a_snapshot(policy):
    authority = compile_policy(policy)
    AuthorityRule.objects.filter(policy=policy).delete()
    assert authority.evaluate(call("delete_file")).allowed is False


def test_evaluate_policy_returns_the_deciding_row(policy):
    decision, row = evaluate_policy(policy, "write_file", {"path": "/tmp/a"})
    assert decision.allowed is True and row is not None and row.position == 10
    decision, row = evaluate_policy(policy, "delete_file", {})
    assert decision.allowed is False and row is not None and row.position == 20


def test_evaluate_policy_reports_the_fallback_as_no_row():
    empty = AuthorityPolicy.objects.create(name="empty", fallback_zone="z")
    decision, row = evaluate_policy(empty, "anything", {})
    assert decision.allowed is True and decision.zone == "z" and row is None


def test_compiled_policy_gates_a_real_agent_run():
    import asyncio

    from orkestrel.core import create_agent, create_tool, create_tool_manager
    from orkestrel.providers import ScriptedProvider

    guard = AuthorityPolicy.objects.create(name="run-guard")
    AuthorityRule.objects.create(
        policy=guard,
        position=1,
        tool_glob="write_*",
        conditions={"path": {"pattern": "^/etc/"}},
        zone="system",
        reason="read-only",
    )
    seen = []
    authority = compile_policy(guard, on_decision=lambda *args: seen.append(args))
    written = []
    tools = create_tool_manager()
    tools.add(create_tool(name="write_file", execute=lambda args: written.append(args) or "ok"))
    provider = ScriptedProvider(
        script=[
            {
                "content": "",
                "tools": [
                    {"id": "1", "name": "write_file", "arguments": {"path": "/etc/hosts"}},
                    {"id": "2", "name": "write_file", "arguments": {"path": "/tmp/x"}},
                ],
            },
            {"content": "done"},
        ]
    )
    agent = create_agent(provider, tools=tools, authority=authority)
    agent.context.messages.add({"role": "user", "content": "write"})

    asyncio.run(agent.generate())

    assert written == [{"path": "/tmp/x"}]
    assert [(c.id, d.allowed, r.position if r else None) for c, d, r in seen] == [
        ("1", False, 1),
        ("2", True, None),
    ]


# Backtracks in ``re`` and in ``regex`` alike: about 5 s at 26 characters, doubling with each.
CATASTROPHIC = "(?:a|a)*$"
STUCK = "a" * 26 + "!"


@pytest.mark.parametrize(
    ("verdict", "expected"),
    # An ``ask`` with no one to answer (no run waits here) is held back as refused.
    [("deny", (False, "held")), ("ask", (False, "held")), ("allow", (False, "open"))],
)
def test_a_pattern_that_runs_out_of_time_on_the_models_argument_fails_closed(verdict, expected):
    guard = AuthorityPolicy.objects.create(
        name="slow", fallback_zone="open", fallback_allowed=False
    )
    AuthorityRule.objects.create(
        policy=guard,
        position=1,
        tool_glob="*",
        conditions={"path": {"pattern": CATASTROPHIC}},
        zone="held",
        verdict=verdict,
    )
    authority = compile_policy(guard)
    began = time.monotonic()
    decision = authority.evaluate(call("write_file", path=STUCK))
    took = time.monotonic() - began
    # A rule that denies or asks applies; one that allows does not (the fallback decides).
    assert (decision.allowed, decision.zone) == expected
    assert took < 1.0  # not the seconds (or hours) the search would take
