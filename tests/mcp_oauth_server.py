"""An MCP server that requires OAuth 2.1 for the tests: the official SDK's ``MCPServer`` with its
own authorization server pieces (``mcp.server.auth``: metadata, dynamic client registration,
authorize, token with PKCE, refresh) over an in-memory provider that approves every request at
once, as a user clicking "Allow" would.

Run as a process (``python tests/mcp_oauth_server.py PORT``; ``McpOAuthProcess`` starts one).
Its tool ``whoami`` answers the access token's subject and how many tokens were issued; its
``/stats`` route counts code exchanges and refreshes. ``MCP_TEST_TOKEN_TTL`` sets the access
tokens' lifetime in seconds.
"""

# No ``from __future__ import annotations``: the SDK reads the tools' annotations at run time.
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any


def build_app(port: int) -> Any:
    """The server's ASGI app (imported only in the server's own process)."""
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.provider import (
        AccessToken,
        AuthorizationCode,
        AuthorizationParams,
        RefreshToken,
        construct_redirect_uri,
    )
    from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
    from mcp.server.mcpserver import MCPServer
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
    from starlette.responses import JSONResponse

    ttl = int(os.environ.get("MCP_TEST_TOKEN_TTL", "3600"))
    base = f"http://127.0.0.1:{port}"
    counts = {"exchanges": 0, "refreshes": 0}

    class Provider:
        def __init__(self) -> None:
            self.clients: dict[str, OAuthClientInformationFull] = {}
            self.codes: dict[str, AuthorizationCode] = {}
            self.access: dict[str, AccessToken] = {}
            self.refresh: dict[str, RefreshToken] = {}

        async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
            return self.clients.get(client_id)

        async def register_client(self, client_info: OAuthClientInformationFull) -> None:
            self.clients[str(client_info.client_id)] = client_info

        async def authorize(self, client: Any, params: AuthorizationParams) -> str:
            code = secrets.token_urlsafe(24)
            self.codes[code] = AuthorizationCode(
                code=code,
                scopes=params.scopes or ["mcp"],
                expires_at=time.time() + 300,
                client_id=str(client.client_id),
                code_challenge=params.code_challenge,
                redirect_uri=params.redirect_uri,
                redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
                resource=params.resource,
                subject="ada",
            )
            return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

        async def load_authorization_code(self, client: Any, code: str) -> Any:
            return self.codes.get(code)

        def _issue(self, client_id: str, scopes: list[str], resource: Any) -> OAuthToken:
            access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
            self.access[access] = AccessToken(
                token=access,
                client_id=client_id,
                scopes=scopes,
                expires_at=int(time.time()) + ttl,
                resource=resource,
                subject="ada",
            )
            self.refresh[refresh] = RefreshToken(
                token=refresh, client_id=client_id, scopes=scopes, resource=resource
            )
            return OAuthToken(
                access_token=access,
                token_type="Bearer",
                expires_in=ttl,
                refresh_token=refresh,
                scope=" ".join(scopes),
            )

        async def exchange_authorization_code(self, client: Any, code: Any) -> OAuthToken:
            self.codes.pop(code.code, None)
            counts["exchanges"] += 1
            return self._issue(str(client.client_id), code.scopes, code.resource)

        async def load_refresh_token(self, client: Any, refresh_token: str) -> Any:
            return self.refresh.get(refresh_token)

        async def exchange_refresh_token(self, client: Any, refresh_token: Any, scopes: Any) -> Any:
            self.refresh.pop(refresh_token.token, None)
            counts["refreshes"] += 1
            return self._issue(
                str(client.client_id), scopes or refresh_token.scopes, refresh_token.resource
            )

        async def load_access_token(self, token: str) -> Any:
            found = self.access.get(token)
            if found is None or (found.expires_at and found.expires_at < time.time()):
                return None
            return found

        async def revoke_token(self, token: Any) -> None:
            self.access.pop(getattr(token, "token", ""), None)

    provider = Provider()
    server = MCPServer(
        "oauth-fixture",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=base,
            resource_server_url=f"{base}/mcp",
            client_registration_options=ClientRegistrationOptions(
                enabled=True, valid_scopes=["mcp"], default_scopes=["mcp"]
            ),
            required_scopes=["mcp"],
        ),
    )

    @server.tool(description="Who the access token belongs to.")
    def whoami() -> str:
        token = get_access_token()
        return f"subject={token.subject if token else None}"

    @server.custom_route("/stats", methods=["GET"])
    async def stats(request: Any) -> Any:
        return JSONResponse(counts)

    return server.streamable_http_app(streamable_http_path="/mcp")


def start(log: Path, env: dict[str, str] | None = None) -> Any:
    """Start the OAuth fixture server (an ``McpProcess``: its ``url`` is the MCP endpoint)."""
    from tests.mcp_server import McpProcess

    return McpProcess.start(log, env=env, script=Path(__file__))


def stats(port: int) -> dict[str, int]:
    """How many code exchanges and refreshes the server answered."""
    import httpx

    return dict(json.loads(httpx.get(f"http://127.0.0.1:{port}/stats", timeout=5).text))


if __name__ == "__main__":
    import uvicorn

    port = int(sys.argv[1])
    uvicorn.run(build_app(port), host="127.0.0.1", port=port, log_level="warning")
