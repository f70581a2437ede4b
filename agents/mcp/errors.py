"""What goes wrong talking to an MCP server, each with a machine ``code``.

::

    McpError                 (mcp_error)
    ├── McpUnreachable       (mcp_unreachable)   no connection, or it dropped
    ├── McpRefused           (mcp_refused)       HTTP 401/403: the credentials
    ├── McpTimeout           (mcp_timeout)       past the server's timeout
    └── McpCredentialMissing (mcp_credential_missing)  the token's variable is unset
        └── McpUserCredentialMissing (mcp_user_credential_missing)  the user has entered none

The messages are what the model (or the operator) reads: they name the server, never a token.
"""

from __future__ import annotations

__all__ = [
    "McpCredentialMissing",
    "McpError",
    "McpRefused",
    "McpTimeout",
    "McpUnreachable",
    "McpUserCredentialMissing",
]


class McpError(Exception):
    """An MCP server could not answer."""

    code = "mcp_error"


class McpUnreachable(McpError):
    """The server cannot be reached, or the connection dropped."""

    code = "mcp_unreachable"


class McpRefused(McpError):
    """The server refused the credentials (HTTP 401 or 403)."""

    code = "mcp_refused"


class McpTimeout(McpError):
    """The server took longer than its timeout."""

    code = "mcp_timeout"


class McpCredentialMissing(McpError):
    """The environment variable that should hold the bearer token is not set."""

    code = "mcp_credential_missing"


class McpUserCredentialMissing(McpCredentialMissing):
    """The server takes each user's own token, and the run's user has none (or an unreadable
    one)."""

    code = "mcp_user_credential_missing"
