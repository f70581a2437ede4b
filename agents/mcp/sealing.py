"""Users' MCP credentials sealed at rest: Fernet (AES-128-CBC with HMAC-SHA256), keyed outside
the database.

The key is derived (HKDF-SHA256) from ``ORKESTREL_CREDENTIALS_KEY`` when it is set, else from
``SECRET_KEY``; it is never stored. To rotate, put the new secret first and the old ones after
it, comma-separated, in ``ORKESTREL_CREDENTIALS_KEY`` (``SECRET_KEY_FALLBACKS`` play that part
for ``SECRET_KEY``): the first seals, every one opens. A sealed token no key opens (a secret
changed without its fallback) reads as unreadable: the user is asked to enter it again.
"""

from __future__ import annotations

import base64
import os

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

__all__ = ["KEY_VARIABLE", "seal", "unseal"]

KEY_VARIABLE = "ORKESTREL_CREDENTIALS_KEY"
# Binds derived keys to this use: the same SECRET_KEY yields unrelated keys elsewhere.
_PURPOSE = b"orkestrel mcp user credentials v1"


def _fernet(secret: str) -> Fernet:
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=_PURPOSE).derive(
        secret.encode()
    )
    return Fernet(base64.urlsafe_b64encode(key))


def _secrets() -> list[str]:
    """The secrets in order: the one that seals first, then those that still open."""
    named = [part.strip() for part in os.environ.get(KEY_VARIABLE, "").split(",")]
    if any(named):
        return [part for part in named if part]
    fallbacks = getattr(settings, "SECRET_KEY_FALLBACKS", None) or []
    return [str(settings.SECRET_KEY), *(str(secret) for secret in fallbacks)]


def _cipher() -> MultiFernet:
    # Read at each use (cheap next to a network call): a rotated key applies without a restart
    # of anything that caches, and tests may change it.
    return MultiFernet([_fernet(secret) for secret in _secrets()])


def seal(token: str) -> str:
    """``token`` encrypted and authenticated, as ASCII text for a column."""
    return _cipher().encrypt(token.encode()).decode("ascii")


def unseal(sealed: str) -> str | None:
    """The token ``sealed`` holds, or ``None`` when no current key opens it."""
    try:
        return _cipher().decrypt(sealed.encode("ascii")).decode()
    except (InvalidToken, UnicodeError, ValueError):
        return None
