"""A profile's bounds as caps: requests may lower them, never raise them."""

from __future__ import annotations

import pytest

from agents.models import AgentProfile
from agents.runtime.caps import AboveCap, Bounds, Caps


def caps(**fields) -> Caps:
    fields.setdefault("limit", 2)
    fields.setdefault("timeout", 60.0)
    fields.setdefault("token_budget", 20)
    return Caps.of(AgentProfile(slug="tight", name="tight", model="demo/echo", **fields))


def test_a_request_within_the_caps_is_what_it_asked():
    asked = Bounds(limit=2, timeout=60.0, budget=20)
    assert caps().check(asked) == asked
    lower = Bounds(limit=1, timeout=1.5, budget=10)
    assert caps().check(lower) == lower
    assert caps().check(Bounds()) == Bounds()


def test_a_request_above_a_cap_is_refused_naming_each_cap_it_passes():
    with pytest.raises(AboveCap) as refused:
        caps().check(Bounds(limit=8, timeout=30.0, budget=120))
    error = refused.value
    assert error.code == "above_cap" and error.status_code == 400
    assert [(e.bound, e.asked, e.cap) for e in error.excesses] == [
        ("limit", 8, 2),
        ("budget", 120, 20),
    ]
    assert error.excesses[0].message == (
        "Ensure this value is less than or equal to 2: the step limit of the agent profile 'tight'."
    )
    assert "token budget of the agent profile 'tight'" in error.excesses[1].message
    with pytest.raises(AboveCap) as late:
        caps().check(Bounds(timeout=60.5))
    assert late.value.excesses[0].message.startswith(
        "Ensure this value is less than or equal to 60: the timeout (s)"
    )


@pytest.mark.parametrize("budget", [None, 0])
def test_a_profile_without_a_token_budget_caps_no_budget(budget):
    unlimited = caps(token_budget=budget)
    assert unlimited.budget is None
    assert unlimited.check(Bounds(budget=10**9)) == Bounds(budget=10**9)
    assert unlimited.resolve(Bounds()) == Bounds(limit=2, timeout=60.0, budget=None)


def test_a_step_limit_of_zero_is_a_cap_too():
    with pytest.raises(AboveCap):
        caps(limit=0).check(Bounds(limit=1))
    assert caps(limit=0).resolve(Bounds(limit=5)).limit == 0


def test_resolve_lowers_to_the_caps_and_fills_in_what_is_unset():
    assert caps().resolve(Bounds()) == Bounds(limit=2, timeout=60.0, budget=20)
    assert caps().resolve(Bounds(limit=8, timeout=600.0, budget=120)) == Bounds(
        limit=2, timeout=60.0, budget=20
    )
    assert caps().resolve(Bounds(limit=1, timeout=5.0, budget=10)) == Bounds(
        limit=1, timeout=5.0, budget=10
    )
    # A budget of 0 is unset, as on the profile: it cannot drop the profile's budget.
    assert caps().resolve(Bounds(budget=0)).budget == 20


def test_clamp_lowers_to_the_caps_and_leaves_what_is_unset_unset():
    assert caps().clamp(Bounds(timeout=600.0, budget=880)) == Bounds(timeout=60.0, budget=20)
    assert caps().clamp(Bounds(timeout=5.0, budget=10)) == Bounds(timeout=5.0, budget=10)
    assert caps().clamp(Bounds()) == Bounds()
    assert caps(token_budget=None).clamp(Bounds(budget=880)) == Bounds(budget=880)
