"""What an API key may do: its ``scopes`` and ``profiles``, checked on every API request.

``read`` covers the safe methods (GET, HEAD, OPTIONS), ``run`` every other one (starting,
cancelling, retrying, deciding, creating a conversation); a view names another scope for its
writes with ``write_scope`` (the key endpoints need ``keys``). A write naming a ``profile``
outside the key's ``profiles`` is refused alike, and so is a write on a conversation (a send,
a retry, a decision: the view's ``written_conversation()`` names it) whose profile is outside
them. The browser's session holds no key and is not
limited: only keys carry scopes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rest_framework import exceptions, status
from rest_framework.permissions import SAFE_METHODS, IsAuthenticated
from rest_framework.request import Request

from conversations.services import conversation_profile

from ..models import ApiKey
from ..models.keys import Scope

if TYPE_CHECKING:
    # Only for types: ``rest_framework.views`` imports this module through DRF's settings.
    from rest_framework.views import APIView

__all__ = [
    "OutOfScope",
    "ScopedKey",
    "check_profile",
    "required_scope",
]


class OutOfScope(exceptions.APIException):
    """The request needs a scope, or a profile, the API key was not given."""

    status_code = status.HTTP_403_FORBIDDEN
    default_detail = "This API key may not do this."
    default_code = "scope"


def required_scope(request: Request, view: APIView | None) -> Scope:
    """The scope ``request`` needs: ``read`` for the safe methods, else the view's writes'."""
    if request.method in SAFE_METHODS:
        return "read"
    scope: Scope = getattr(view, "write_scope", "run")
    return scope


class ScopedKey(IsAuthenticated):
    """Signed in, and, through an API key, within the key's scopes (403 ``scope`` if not)."""

    def has_permission(self, request: Request, view: Any) -> bool:
        if not super().has_permission(request, view):
            return False
        key = request.auth
        if isinstance(key, ApiKey):
            scope = required_scope(request, view)
            if not key.allows(scope):
                raise OutOfScope(f"This API key lacks the {scope!r} scope.")
            if scope == "run" and key.profile_list is not None:
                # Every write that picks a profile names it ``profile`` (a new conversation, a
                # switch, a fork): refused here once rather than in each view.
                data = request.data
                slug = data.get("profile") if hasattr(data, "get") else None
                if isinstance(slug, str) and slug:
                    check_profile(request, slug)
                # A write on an existing conversation (a send, a retry, a decision...) uses
                # the conversation's profile: the view names the conversation it acts on.
                written = getattr(view, "written_conversation", None)
                conversation_id = written() if callable(written) else None
                if conversation_id is not None:
                    current = conversation_profile(key.user_id, conversation_id)
                    if current is not None:
                        check_profile(request, current)
        return True


def check_profile(request: Request, slug: str) -> None:
    """Refuse (403 ``scope``) a profile outside the request's API key's ``profiles``."""
    key = request.auth
    if isinstance(key, ApiKey) and not key.allows_profile(slug):
        raise OutOfScope(f"This API key may not use the profile {slug!r}.")
