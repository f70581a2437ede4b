"""Connecting a user's account to an MCP server that requires OAuth 2.1 (authorization code
with PKCE), in two steps across the browser's round trip to the authorization server.

``begin`` discovers the server's authorization server (RFC 9728 protected resource metadata,
then RFC 8414 metadata), registers a client for the user (RFC 7591 dynamic registration) and
answers the URL to send the browser to, with the ``Pending`` state to keep in the user's
session (the PKCE verifier never leaves the server). ``finish`` checks the ``state`` that
came back and exchanges the code (with the verifier and the RFC 8707 resource) for tokens.
The SDK's own client-side OAuth pieces (``mcp.client.auth``) build and read every request.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import httpx2
from mcp.client.auth import PKCEParameters
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_client_registration_request,
    create_oauth_metadata_request,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    handle_registration_response,
)
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
)
from mcp.shared.auth_utils import resource_url_from_server_url
from pydantic import AnyUrl, ValidationError

from .endpoint import McpEndpoint
from .errors import McpError, McpRefused, McpUnreachable
from .oauth_grant import OAuthGrant

__all__ = ["Pending", "begin", "client_metadata", "finish"]

CLIENT_NAME = "orkestrel"


@dataclass(frozen=True, slots=True)
class Pending:
    """A connection under way, kept in the user's session until the browser comes back."""

    server: str
    state: str
    verifier: str
    redirect_uri: str
    resource: str
    client: str  # the registered client, as JSON
    metadata: str  # the authorization server's metadata, as JSON ("" when it has none)

    def as_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def from_dict(cls, value: Any) -> Pending | None:
        if not isinstance(value, dict):
            return None
        try:
            return cls(**{name: str(value[name]) for name in cls.__slots__})
        except KeyError:
            return None


def client_metadata(redirect_uri: str, scope: str | None) -> OAuthClientMetadata:
    """How orkestrel registers itself: a confidential web app with one redirect URI."""
    return OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect_uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="client_secret_post",
        scope=scope,
    )


async def begin(endpoint: McpEndpoint, redirect_uri: str) -> tuple[str, Pending]:
    """The authorization URL to send the user to, and what to keep until they come back
    (``McpError``: the server or its authorization server could not be used)."""
    async with _client(endpoint) as http:
        auth_server, scopes = await _protected_resource(http, endpoint.url)
        metadata = await _server_metadata(http, auth_server, endpoint.url)
        scope = " ".join(scopes) if scopes else None
        registration = create_client_registration_request(
            metadata, client_metadata(redirect_uri, scope), auth_server or endpoint.url
        )
        try:
            client = await handle_registration_response(await http.send(registration))
        except Exception as error:  # noqa: BLE001 - the SDK's registration errors, told plainly
            raise McpRefused(f"MCP server {endpoint.name!r}: {error}") from None
    pkce = PKCEParameters.generate()
    state = secrets.token_urlsafe(32)
    resource = resource_url_from_server_url(endpoint.url)
    query = {
        "response_type": "code",
        "client_id": client.client_id or "",
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": pkce.code_challenge,
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if scope:
        query["scope"] = scope
    authorize = (
        str(metadata.authorization_endpoint) if metadata else _joined(endpoint.url, "/authorize")
    )
    pending = Pending(
        server=endpoint.name,
        state=state,
        verifier=pkce.code_verifier,
        redirect_uri=redirect_uri,
        resource=resource,
        client=client.model_dump_json(exclude_none=True),
        metadata=metadata.model_dump_json(exclude_none=True) if metadata else "",
    )
    return f"{authorize}?{urlencode(query)}", pending


async def finish(endpoint: McpEndpoint, pending: Pending, code: str) -> OAuthGrant:
    """Exchange the authorization ``code`` for tokens (``McpError``: refused)."""
    client = OAuthClientInformationFull.model_validate_json(pending.client)
    metadata = OAuthMetadata.model_validate_json(pending.metadata) if pending.metadata else None
    token_url = str(metadata.token_endpoint) if metadata else _joined(endpoint.url, "/token")
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": pending.redirect_uri,
        "client_id": client.client_id or "",
        "code_verifier": pending.verifier,
        "resource": pending.resource,
    }
    if client.client_secret:
        form["client_secret"] = client.client_secret
    async with _client(endpoint) as http:
        try:
            response = await http.post(token_url, data=form)
        except httpx2.HTTPError as error:
            raise McpUnreachable(f"MCP server {endpoint.name!r}: {error}") from None
    if response.status_code != 200:
        raise McpRefused(
            f"MCP server {endpoint.name!r} refused the authorization (HTTP {response.status_code})"
        )
    try:
        tokens = OAuthToken.model_validate_json(response.content)
    except ValidationError:
        raise McpError(f"MCP server {endpoint.name!r} answered no usable tokens") from None
    return OAuthGrant.issued(tokens, client, metadata)


# -- discovery ----------------------------------------------------------------------------------


def _client(endpoint: McpEndpoint) -> httpx2.AsyncClient:
    timeout = httpx2.Timeout(endpoint.call_timeout, connect=endpoint.connect_timeout)
    return httpx2.AsyncClient(headers=dict(endpoint.headers), timeout=timeout)


def _joined(url: str, path: str) -> str:
    parts = httpx2.URL(url)
    return str(parts.copy_with(path=path, query=None))


async def _protected_resource(
    http: httpx2.AsyncClient, server_url: str
) -> tuple[str | None, list[str]]:
    """The authorization server the MCP server names, and the scopes it supports."""
    for url in build_protected_resource_metadata_discovery_urls(None, server_url):
        try:
            found = await handle_protected_resource_response(
                await http.send(create_oauth_metadata_request(url))
            )
        except httpx2.HTTPError as error:
            raise McpUnreachable(f"{server_url} is unreachable: {error}") from None
        if found is not None and found.authorization_servers:
            return str(found.authorization_servers[0]), list(found.scopes_supported or [])
    return None, []  # the 2025-03-26 way: the server's own origin is its authorization server


async def _server_metadata(
    http: httpx2.AsyncClient, auth_server: str | None, server_url: str
) -> OAuthMetadata | None:
    for url in build_oauth_authorization_server_metadata_discovery_urls(auth_server, server_url):
        ok, metadata = await handle_auth_metadata_response(
            await http.send(create_oauth_metadata_request(url))
        )
        if not ok:
            break
        if metadata is not None:
            return metadata
    return None
