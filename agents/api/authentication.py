"""``Authorization: Bearer <api key>``: how programs sign in to the API.

Every refused key gets the same answer, whatever the reason (unknown, revoked, expired, an
inactive user's): a caller learns nothing about which keys exist.
"""

from __future__ import annotations

from django.contrib.auth.base_user import AbstractBaseUser
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, get_authorization_header
from rest_framework.request import Request

from ..models import ApiKey
from ..usage.charge import KeyRef, charge_key

__all__ = ["ApiKeyAuthentication"]

KEYWORD = b"bearer"
INVALID = "Invalid API key."


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticates as the key's user; ``request.auth`` is the ``ApiKey``."""

    def authenticate(self, request: Request) -> tuple[AbstractBaseUser, ApiKey] | None:
        words = get_authorization_header(request).split()
        if not words or words[0].lower() != KEYWORD:
            charge_key(None)
            return None  # not ours: the session may still apply
        if len(words) != 2:
            raise exceptions.AuthenticationFailed(INVALID, code="invalid_api_key")
        try:
            raw = words[1].decode("ascii")
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed(INVALID, code="invalid_api_key") from None
        key = ApiKey.objects.find(raw)
        if key is None:
            raise exceptions.AuthenticationFailed(INVALID, code="invalid_api_key")
        key.touch()
        # What this request starts is charged to the key (the usage ledger).
        charge_key(KeyRef(key.pk, key.name))
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        # A ``WWW-Authenticate`` value makes DRF answer 401 rather than 403.
        return "Bearer"
