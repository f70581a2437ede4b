"""Check that a provider endpoint answers: one short, real HTTP request to its model list.

The key is sent only in the request's headers; what comes back for display is a status line,
never the key and never the response body (providers echo parts of bad keys in error bodies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from orkestrel.core import ProviderError

from .models import ProviderEndpoint

__all__ = ["ConnectionCheck", "check_endpoint", "models_url"]

# An operator is waiting on the page: never wait as long as a generation might.
CHECK_CONNECT_TIMEOUT = 5.0
CHECK_READ_TIMEOUT = 10.0
ANTHROPIC_VERSION = "2023-06-01"


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    """The outcome of one check: ``ok`` and a one-line, secret-free ``detail``."""

    ok: bool
    detail: str


def models_url(endpoint: ProviderEndpoint) -> str | None:
    """The URL listing the endpoint's models (``None`` for scripted endpoints)."""
    base = endpoint.base_url.rstrip("/")
    match endpoint.kind:
        case ProviderEndpoint.Kind.OPENAI:
            return f"{base}/models"
        case ProviderEndpoint.Kind.ANTHROPIC:
            return f"{base}/v1/models"
        case ProviderEndpoint.Kind.OLLAMA:
            return f"{base}/api/tags"
    return None


def _headers(endpoint: ProviderEndpoint, key: str | None) -> dict[str, str]:
    headers = {"accept": "application/json"}
    if endpoint.kind == ProviderEndpoint.Kind.ANTHROPIC:
        headers["anthropic-version"] = ANTHROPIC_VERSION
        if key:
            headers["x-api-key"] = key
    elif key:
        headers["authorization"] = f"Bearer {key}"
    return headers


def _count_models(payload: Any) -> int | None:
    if isinstance(payload, dict):
        listed = payload.get("data", payload.get("models"))
        if isinstance(listed, list):
            return len(listed)
    return None


def _redact(text: str, key: str | None) -> str:
    return text.replace(key, "[redacted]") if key else text


def check_endpoint(
    endpoint: ProviderEndpoint, *, transport: httpx.BaseTransport | None = None
) -> ConnectionCheck:
    """Request the endpoint's model list once and report whether it answered with success."""
    url = models_url(endpoint)
    if url is None:
        return ConnectionCheck(True, "scripted endpoint: nothing to connect to")
    try:
        key = endpoint.api_key()
    except ProviderError as error:
        # A forbidden key variable: say why, and send nothing (not even a keyless request).
        return ConnectionCheck(False, f"{error.message} Nothing was sent.")
    note = ""
    if endpoint.api_key_env and key is None:
        note = f" (key variable {endpoint.api_key_env} is not set)"
    timeout = httpx.Timeout(
        min(endpoint.read_timeout, CHECK_READ_TIMEOUT),
        connect=min(endpoint.connect_timeout, CHECK_CONNECT_TIMEOUT),
    )
    try:
        with httpx.Client(timeout=timeout, transport=transport, follow_redirects=False) as client:
            response = client.get(url, headers=_headers(endpoint, key))
    except httpx.HTTPError as error:
        reason = _redact(str(error) or type(error).__name__, key)
        return ConnectionCheck(False, f"could not reach {url}: {reason}{note}")
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    if not response.is_success:
        return ConnectionCheck(False, f"{url} answered {status}{note}")
    try:
        count = _count_models(response.json())
    except ValueError:
        count = None
    listed = f", {count} models listed" if count is not None else ""
    return ConnectionCheck(True, f"{url} answered {status}{listed}{note}")
