import pytest

from orkestrel.core import TokenUsage, create_budget, create_token_budget


def test_budget_fires_signal_when_max_reached():
    budget = create_budget(10, len).start()
    budget.consume("abcd")
    assert not budget.exhausted and not budget.signal.aborted
    budget.consume("abcdef")
    assert budget.consumed == 10
    assert budget.exhausted and budget.signal.aborted


def test_budget_clear_resets_consumption_and_signal():
    budget = create_budget(1, len)
    budget.consume("ab")
    assert budget.signal.aborted
    budget.clear()
    assert budget.consumed == 0 and not budget.exhausted and not budget.signal.aborted


def test_negative_amounts_are_not_charged():
    budget = create_budget(5, lambda x: x)
    budget.consume(-3)
    assert budget.consumed == 0


@pytest.mark.parametrize(("scope", "expected"), [("total", 30), ("prompt", 10), ("completion", 20)])
def test_token_budget_charges_its_scope(scope, expected):
    budget = create_token_budget(1000, scope)
    budget.consume(TokenUsage(10, 20, 30))
    assert budget.consumed == expected


def test_token_budget_accepts_mapping_usage():
    budget = create_token_budget(25)
    budget.consume({"prompt": 5, "completion": 20, "total": 25})
    assert budget.exhausted


def test_token_budget_rejects_unknown_scope():
    with pytest.raises(ValueError, match="scope"):
        create_token_budget(10, "cached")


@pytest.mark.parametrize("bad", [-1, float("nan"), "10", True])
def test_budget_rejects_bad_max(bad):
    with pytest.raises(ValueError, match="max"):
        create_budget(bad, len)


def test_budget_rejects_non_callable_consume():
    with pytest.raises(TypeError, match="consume"):
        create_budget(1, 5)
