"""The access token a user's OAuth-connected MCP server gets, refreshed before it expires.

A connection asks ``access_token`` as it opens: a grant whose token expires within a minute is
refreshed first (the refresh-token grant at the authorization server's token endpoint, as the
SDK builds it), the new tokens sealed back into the user's credential. The process keeps the
newest grant of each user and server, so a run still holding the grant it started with does
not refresh again with a refresh token the server already rotated. A refresh the server
refuses asks the user to connect again; nothing here writes a token to a log.
"""

from __future__ import annotations

import threading

import httpx2
from mcp.shared.auth import OAuthToken
from pydantic import ValidationError

from orkestrel.db import in_thread

from .credentials import store_grant
from .endpoint import CREDENTIAL_PAGE, McpEndpoint
from .errors import McpRefused, McpUnreachable, McpUserCredentialMissing
from .oauth_grant import OAuthGrant

__all__ = ["access_token", "forget_grants"]

_lock = threading.Lock()
# (user id, server id) → the newest grant this process saw.
_newest: dict[tuple[int, int | None], OAuthGrant] = {}


def _current(endpoint: McpEndpoint) -> tuple[tuple[int, int | None], OAuthGrant]:
    grant = endpoint.oauth_grant()
    assert endpoint.credential is not None  # ``oauth_grant`` raised otherwise
    key = (endpoint.credential.user_id, endpoint.pk)
    with _lock:
        known = _newest.get(key)
    if known is not None and (known.expires_at or 0) > (grant.expires_at or 0):
        grant = known
    return key, grant


async def access_token(endpoint: McpEndpoint) -> str:
    """The user's access token for ``endpoint``, refreshed first when it is about to expire."""
    key, grant = _current(endpoint)
    if grant.stale:
        if not grant.tokens.refresh_token:
            raise McpUserCredentialMissing(
                f"MCP server {endpoint.name!r}: your connection expired; connect again in "
                f"{CREDENTIAL_PAGE}"
            )
        grant = await _refreshed(endpoint, grant)
        with _lock:
            _newest[key] = grant
        await in_thread(store_grant)(key[0], endpoint.pk, grant)
    return grant.tokens.access_token


async def _refreshed(endpoint: McpEndpoint, grant: OAuthGrant) -> OAuthGrant:
    client = grant.client
    token_url = (
        str(grant.metadata.token_endpoint)
        if grant.metadata
        else str(httpx2.URL(endpoint.url).copy_with(path="/token", query=None))
    )
    form = {
        "grant_type": "refresh_token",
        "refresh_token": grant.tokens.refresh_token or "",
        "client_id": client.client_id or "",
    }
    if client.client_secret:
        form["client_secret"] = client.client_secret
    timeout = httpx2.Timeout(endpoint.call_timeout, connect=endpoint.connect_timeout)
    try:
        async with httpx2.AsyncClient(timeout=timeout) as http:
            response = await http.post(token_url, data=form)
    except httpx2.HTTPError as error:
        raise McpUnreachable(
            f"MCP server {endpoint.name!r}: its authorization server is unreachable ({error})"
        ) from None
    if response.status_code != 200:
        raise McpRefused(
            f"MCP server {endpoint.name!r} refused to renew your connection (HTTP "
            f"{response.status_code}): connect again in {CREDENTIAL_PAGE}"
        )
    try:
        tokens = OAuthToken.model_validate_json(response.content)
    except ValidationError:
        raise McpRefused(f"MCP server {endpoint.name!r} renewed with no usable token") from None
    return grant.refreshed(tokens)


def forget_grants() -> None:
    """Drop the grants this process remembers (tests; a user who disconnected)."""
    with _lock:
        _newest.clear()
