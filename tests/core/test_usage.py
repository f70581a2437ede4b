import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orkestrel.core import (
    IMAGE_TOKEN_ESTIMATE,
    MESSAGE_TOKEN_OVERHEAD,
    Message,
    TokenUsage,
    ToolCall,
    estimate_messages,
    estimate_tokens,
    sanitize_usage,
)


def test_usage_adds_fieldwise():
    assert TokenUsage(1, 2, 3) + TokenUsage(10, 20, 30) == TokenUsage(11, 22, 33)


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        (TokenUsage(3, 4, 7), TokenUsage(3, 4, 7)),
        ({"prompt": -1, "completion": 2.9, "total": math.inf}, TokenUsage(0, 2, 0)),
        ({"prompt": math.nan, "completion": "5", "total": True}, TokenUsage(0, 0, 0)),
        ({}, TokenUsage(0, 0, 0)),
    ],
)
def test_sanitize_usage_floors_dirty_fields(raw, clean):
    assert sanitize_usage(raw) == clean


@given(
    st.dictionaries(
        st.sampled_from(["prompt", "completion", "total"]),
        st.floats(allow_nan=True, allow_infinity=True) | st.integers(),
    )
)
def test_sanitize_usage_is_total_and_non_negative(raw):
    usage = sanitize_usage(raw)
    assert all(isinstance(v, int) and v >= 0 for v in usage.to_dict().values())


def test_estimate_tokens_is_ceil_of_quarter_length():
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_estimate_messages_sums_content_overhead_calls_and_images():
    plain = Message("1", "user", "abcdefgh")
    assert estimate_messages([]) == 0
    assert estimate_messages([plain]) == 2 + MESSAGE_TOKEN_OVERHEAD
    with_image = Message("2", "user", "", images=("x", "y"))
    assert estimate_messages([with_image]) == MESSAGE_TOKEN_OVERHEAD + 2 * IMAGE_TOKEN_ESTIMATE
    calling = Message("3", "assistant", "", calls=(ToolCall("c", "add", {"a": 1}),))
    assert estimate_messages([calling]) > MESSAGE_TOKEN_OVERHEAD


def test_estimate_messages_is_total_for_circular_arguments():
    circular: dict = {}
    circular["self"] = circular
    message = Message("1", "assistant", "", calls=(ToolCall("c", "t", circular),))
    assert estimate_messages([message]) > MESSAGE_TOKEN_OVERHEAD


def test_usage_sums_every_counter_and_keeps_the_latest_prompt():
    first = sanitize_usage(TokenUsage(100, 20, 120, cache_read=80, reasoning=5))
    second = sanitize_usage(TokenUsage(150, 10, 160, cache_read=100, cache_write=40))
    both = first + second
    assert both == TokenUsage(250, 30, 280, cache_read=180, cache_write=40, reasoning=5)
    # A snapshot, not a counter: the context the provider counted at the later request.
    assert (first.latest_prompt, both.latest_prompt) == (100, 150)
    assert both.to_dict() == {
        "prompt": 250,
        "completion": 30,
        "total": 280,
        "cache_read": 180,
        "cache_write": 40,
        "reasoning": 5,
    }
