"""``agents.schedules.signature``: Stripe-style timed HMAC-SHA256 signatures of a body."""

from __future__ import annotations

import pytest

from agents.schedules import TOLERANCE, SignatureError, sign, verify

SECRET = "whsec_test"
BODY = b'{"ref": "main"}'
NOW = 1_780_000_000


def test_a_signature_of_the_body_verifies_and_names_its_digest():
    header = sign(SECRET, BODY, NOW)
    signed = verify(header, BODY, SECRET, now=NOW + 10)
    assert signed.timestamp == NOW
    assert header.endswith(f"v1={signed.digest}")


def test_one_matching_entry_among_several_is_enough():
    good = sign(SECRET, BODY, NOW).split(",")[1]
    header = f"t={NOW},v1={'0' * 64},{good}"
    assert verify(header, BODY, SECRET, now=NOW).digest == good.removeprefix("v1=")


@pytest.mark.parametrize(
    ("header", "body", "secret", "now", "code"),
    [
        (None, BODY, SECRET, NOW, "signature_missing"),
        ("v1=abc", BODY, SECRET, NOW, "signature_malformed"),
        (f"t={NOW}", BODY, SECRET, NOW, "signature_malformed"),
        (sign(SECRET, BODY, NOW), b'{"ref": "evil"}', SECRET, NOW, "signature_mismatch"),
        (sign("whsec_other", BODY, NOW), BODY, SECRET, NOW, "signature_mismatch"),
        (sign(SECRET, BODY, NOW), BODY, SECRET, NOW + TOLERANCE + 1, "signature_expired"),
        (sign(SECRET, BODY, NOW + TOLERANCE + 1), BODY, SECRET, NOW, "signature_expired"),
    ],
)
def test_a_bad_signature_is_refused_with_its_reason(header, body, secret, now, code):
    with pytest.raises(SignatureError) as refused:
        verify(header, body, secret, now=now)
    assert refused.value.code == code and refused.value.status == 401
