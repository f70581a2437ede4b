"""What a user's OAuth connection to an MCP server keeps, sealed in their credential: the
tokens, the client the server registered for them, the authorization server's metadata (its
token endpoint, for refreshes) and when the access token expires. Never shown to anyone."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, replace

from mcp.shared.auth import OAuthClientInformationFull, OAuthMetadata, OAuthToken
from pydantic import ValidationError

__all__ = ["OAuthGrant"]

# Refreshed this long before it expires: a call must not start with a token about to lapse.
REFRESH_MARGIN_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class OAuthGrant:
    """One user's tokens for one server, with what refreshing them takes."""

    tokens: OAuthToken
    client: OAuthClientInformationFull
    metadata: OAuthMetadata | None
    expires_at: float | None

    @classmethod
    def issued(
        cls, tokens: OAuthToken, client: OAuthClientInformationFull, metadata: OAuthMetadata | None
    ) -> OAuthGrant:
        """A grant for tokens just issued (their ``expires_in`` counted from now)."""
        expires = time.time() + tokens.expires_in if tokens.expires_in else None
        return cls(tokens, client, metadata, expires)

    def refreshed(self, tokens: OAuthToken) -> OAuthGrant:
        """This grant with refreshed tokens (a refresh token left out is kept)."""
        if tokens.refresh_token is None:
            tokens = tokens.model_copy(update={"refresh_token": self.tokens.refresh_token})
        fresh = OAuthGrant.issued(tokens, self.client, self.metadata)
        return replace(self, tokens=fresh.tokens, expires_at=fresh.expires_at)

    @property
    def stale(self) -> bool:
        """Whether the access token has expired or is about to."""
        margin = REFRESH_MARGIN_SECONDS
        return self.expires_at is not None and time.time() >= self.expires_at - margin

    def seconds_left(self) -> float | None:
        """The access token's remaining life (``None``: the server gave none)."""
        return None if self.expires_at is None else self.expires_at - time.time()

    def to_json(self) -> str:
        return json.dumps(
            {
                "tokens": self.tokens.model_dump(mode="json", exclude_none=True),
                "client": self.client.model_dump(mode="json", exclude_none=True),
                "metadata": (
                    self.metadata.model_dump(mode="json", exclude_none=True)
                    if self.metadata
                    else None
                ),
                "expires_at": self.expires_at,
            }
        )

    @classmethod
    def from_json(cls, text: str) -> OAuthGrant | None:
        """A grant read back (``None``: not one, e.g. a plain token)."""
        try:
            value = json.loads(text)
            if not isinstance(value, dict):
                return None
            metadata = value.get("metadata")
            expires = value.get("expires_at")
            return cls(
                OAuthToken.model_validate(value["tokens"]),
                OAuthClientInformationFull.model_validate(value["client"]),
                OAuthMetadata.model_validate(metadata) if metadata else None,
                float(expires) if isinstance(expires, int | float) else None,
            )
        except (ValueError, KeyError, TypeError, ValidationError):
            return None
