"""Schemathesis hooks for the REST API's schema (``schemathesis.toml`` loads them; so does
``tests/web/api/test_schemathesis.py``): a body type schemathesis has no serializer for."""

from __future__ import annotations

import json

import schemathesis


@schemathesis.serializer("application/jsonl")
def json_lines(ctx: object, value: object) -> bytes:
    """A conversation import's body (JSON Lines): whatever was generated, as text (the import
    validates it)."""
    return value.encode() if isinstance(value, str) else json.dumps(value).encode()
