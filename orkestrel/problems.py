"""RFC 9457 problem details: the one error body of the REST API, wherever it is answered
(DRF's exception handler, an unmatched path, the request gate before Django, the server)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any

__all__ = ["PROBLEM", "problem"]

PROBLEM = "application/problem+json"


def problem(
    status: int, detail: str, code: str, errors: dict[str, Any] | None = None
) -> dict[str, Any]:
    """An error's body: RFC 9457's ``type``, ``title`` and ``status``, and the API's own
    ``detail`` and ``code`` (plus ``errors``, field → messages, on a validation error)."""
    body: dict[str, Any] = {
        "type": "about:blank",
        "title": HTTPStatus(status).phrase,
        "status": status,
        "detail": detail,
        "code": code,
    }
    if errors is not None:
        body["errors"] = errors
    return body
