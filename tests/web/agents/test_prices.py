"""Prices on an endpoint and what usage costs at them (``agents.models.prices``)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from agents.models import ProviderEndpoint
from agents.models.prices import usage_cost
from orkestrel.core import TokenUsage

PRICES = {"input": 2, "output": 8, "cache_read": 0.5, "cache_write": 2.5}


def test_cost_is_prices_per_million_times_the_counters():
    usage = TokenUsage(1_000_000, 500_000, 1_500_000)
    assert usage_cost(usage, PRICES) == Decimal("6")


def test_cached_input_is_priced_apart_from_the_rest_of_the_prompt():
    # 2006 in, 1920 of them read from the cache and 40 written to it; 300 out.
    usage = TokenUsage(2006, 300, 2306, cache_read=1920, cache_write=40)
    expected = Decimal(46) * 2 + Decimal(1920) * Decimal("0.5") + 40 * Decimal("2.5") + 300 * 8
    assert usage_cost(usage, PRICES) == expected / 1_000_000
    # Without a cache price, cached input costs what input does.
    assert usage_cost(usage, {"input": 2, "output": 8}) == Decimal("0.006412")


def test_no_price_is_an_unknown_cost_not_a_free_one():
    assert usage_cost(TokenUsage(10, 5, 15), None) is None
    assert usage_cost(TokenUsage(10, 5, 15), {}) is None
    assert usage_cost(TokenUsage(), {"input": 0, "output": 0}) == Decimal(0)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("prices", "message"),
    [
        ({"m": {"input": -1}}, "non-negative"),
        ({"m": {"input": "1"}}, "non-negative"),
        ({"m": {"prompt": 1}}, "Unknown price prompt"),
        ({"m": 1}, "JSON object"),
        ({"other": {"input": 1}}, "does not serve"),
    ],
)
def test_the_endpoint_refuses_prices_that_are_not_per_model_non_negative_numbers(prices, message):
    endpoint = ProviderEndpoint(
        name="priced", kind="openai", base_url="https://api.example/v1", models=["m"]
    )
    endpoint.prices = prices
    with pytest.raises(ValidationError) as caught:
        endpoint.full_clean()
    assert message in str(caught.value.message_dict["prices"])
    endpoint.prices = {"m": PRICES}
    endpoint.full_clean()
    assert endpoint.price_of("m") == PRICES and endpoint.price_of("x") is None


@pytest.mark.django_db
def test_the_admin_form_sets_prices_and_refuses_a_negative_one(admin_client):
    url = reverse("admin:agents_providerendpoint_add")
    form = {
        "name": "openai",
        "kind": "openai",
        "base_url": "https://api.openai.com/v1",
        "models": '["gpt-4o-mini"]',
        "connect_timeout": "10",
        "read_timeout": "300",
        "max_retries": "2",
    }
    refused = admin_client.post(url, {**form, "prices": '{"gpt-4o-mini": {"input": -0.15}}'})
    assert refused.status_code == 200 and "non-negative number" in refused.content.decode()
    prices = '{"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075}}'
    assert admin_client.post(url, {**form, "prices": prices}).status_code == 302
    assert ProviderEndpoint.objects.get().price_of("gpt-4o-mini") == {
        "input": 0.15,
        "output": 0.6,
        "cache_read": 0.075,
    }
