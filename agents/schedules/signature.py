"""Webhook signatures: an HMAC-SHA256 of the request's body, timed, as Stripe signs its events.

The sender sends ``X-Orkestrel-Signature: t=<unix seconds>,v1=<hex>``, where the hex is the
HMAC-SHA256, keyed with the schedule's secret, of ``<t>.<body>`` (the body's exact bytes).
Several ``v1`` entries may be given (a sender rolling its secret); one matching is enough. The
time must be within ``TOLERANCE`` seconds of ours, either way, and a signature is taken once
(the caller records the matching digest: the same one again is a replay). Pure: the caller
passes the secret and the time.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import ClassVar

__all__ = ["HEADER", "TOLERANCE", "SignatureError", "sign", "verify"]

HEADER = "X-Orkestrel-Signature"
# Seconds a signature's time may differ from ours: old enough to be a replay, beyond.
TOLERANCE = 300
SCHEME = "v1"


class SignatureError(Exception):
    """A signature that does not authenticate the request; ``code`` says how."""

    status: ClassVar[int] = 401

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Signed:
    """A verified signature: its time and the digest that matched (what a replay repeats)."""

    timestamp: int
    digest: str


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The header's value signing ``body`` at ``timestamp`` with ``secret``."""
    return f"t={timestamp},{SCHEME}={_digest(secret, body, timestamp)}"


def verify(header: str | None, body: bytes, secret: str, *, now: float) -> Signed:
    """The signature ``header`` gives, if it signs ``body`` with ``secret`` within
    ``TOLERANCE`` of ``now``; else ``SignatureError``."""
    if not header:
        raise SignatureError("signature_missing", f"The request has no {HEADER} header.")
    timestamp, digests = _parse(header)
    if abs(now - timestamp) > TOLERANCE:
        raise SignatureError(
            "signature_expired",
            f"The signature's time is more than {TOLERANCE} seconds from the server's.",
        )
    expected = _digest(secret, body, timestamp)
    for digest in digests:
        if hmac.compare_digest(digest, expected):
            return Signed(timestamp=timestamp, digest=expected)
    raise SignatureError("signature_mismatch", "The signature does not match the body.")


def _parse(header: str) -> tuple[int, list[str]]:
    timestamp: int | None = None
    digests: list[str] = []
    for part in header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and value.isdigit():
            timestamp = int(value)
        elif key == SCHEME and value:
            digests.append(value.lower())
    if timestamp is None or not digests:
        raise SignatureError(
            "signature_malformed", f"Write {HEADER} as t=<unix seconds>,{SCHEME}=<hex HMAC>."
        )
    return timestamp, digests


def _digest(secret: str, body: bytes, timestamp: int) -> str:
    signed = str(timestamp).encode() + b"." + body
    return hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
