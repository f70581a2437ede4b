"""Users' own tokens for per-user servers: put on the endpoints a run (or a check) uses, and
entered, replaced and removed by their owners (the settings page, the API). Nothing here
returns a token to anyone but the connection that sends it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from django.contrib.auth import get_user_model
from django.db.models import Q

from ..models import McpCredential, McpServer
from .endpoint import McpEndpoint, UserCredential, endpoint_of
from .oauth_grant import OAuthGrant
from .sealing import seal, unseal

__all__ = [
    "CredentialSlot",
    "credential_of",
    "credential_slots",
    "enter_credential",
    "oauth_endpoint",
    "remove_credential",
    "store_grant",
    "with_credentials",
]


# The kinds of authentication where each user brings their own credential.
PER_USER = (McpServer.Auth.USER_TOKEN, McpServer.Auth.OAUTH)


def credential_of(user_id: int, sealed: str | None) -> UserCredential:
    """``user_id``'s credential from its sealed form (``None``: they entered none)."""
    if sealed is None:
        return UserCredential(user_id, "missing")
    token = unseal(sealed)
    if token is None:
        return UserCredential(user_id, "unreadable")
    return UserCredential(user_id, "present", token)


def with_credentials(endpoints: Iterable[McpEndpoint], user_id: int) -> tuple[McpEndpoint, ...]:
    """``endpoints``, each per-user one carrying ``user_id``'s credential (one query at most)."""
    endpoints = tuple(endpoints)
    wanted = [endpoint.pk for endpoint in endpoints if endpoint.per_user and endpoint.pk]
    if not wanted:
        return endpoints
    sealed = dict(
        McpCredential.objects.filter(user_id=user_id, server_id__in=wanted).values_list(
            "server_id", "sealed"
        )
    )
    return tuple(
        replace(endpoint, credential=credential_of(user_id, sealed.get(endpoint.pk)))
        if endpoint.per_user and endpoint.pk
        else endpoint
        for endpoint in endpoints
    )


@dataclass(frozen=True, slots=True)
class CredentialSlot:
    """A server a user may keep a credential for, as their settings page lists it (never the
    token itself)."""

    server_id: int
    name: str
    address: str
    # The server takes users' tokens now, and is open to this user (a token may be entered).
    in_use: bool
    state: Literal["present", "missing", "unreadable"]
    updated: datetime | None
    # The user connects an account (OAuth) rather than entering a token.
    oauth: bool = False


def _group_ids(user_id: int) -> frozenset[int]:
    memberships = get_user_model().groups.through.objects.filter(user_id=user_id)
    return frozenset(memberships.values_list("group_id", flat=True))


def credential_slots(user_id: int) -> list[CredentialSlot]:
    """The servers ``user_id`` may enter a token for, and any other they still keep one for
    (to remove it), by name."""
    kept = {
        credential.server_id: credential
        for credential in McpCredential.objects.filter(user_id=user_id)
    }
    rows = (
        McpServer.objects.filter(Q(enabled=True, auth__in=PER_USER) | Q(pk__in=list(kept)))
        .prefetch_related("users", "groups")
        .order_by("name")
    )
    groups: frozenset[int] | None = None

    def groups_of(_: int) -> frozenset[int]:
        nonlocal groups
        if groups is None:
            groups = _group_ids(user_id)
        return groups

    slots: list[CredentialSlot] = []
    for row in rows:
        in_use = (
            row.enabled and row.auth in PER_USER and endpoint_of(row).admits(user_id, groups_of)
        )
        credential = kept.get(row.pk)
        if not in_use and credential is None:
            continue
        state = credential_of(user_id, credential.sealed if credential else None).state
        slots.append(
            CredentialSlot(
                row.pk,
                row.name,
                row.url,
                bool(in_use),
                state,
                credential.updated if credential else None,
                row.auth == McpServer.Auth.OAUTH,
            )
        )
    return slots


def enter_credential(user_id: int, server: str, token: str) -> CredentialSlot:
    """Enter or replace ``user_id``'s token for ``server`` (``LookupError``: not one they may
    enter a token for; ``ValidationError``: not a token)."""
    slot = next(
        (s for s in credential_slots(user_id) if s.name == server and s.in_use and not s.oauth),
        None,
    )
    if slot is None:
        raise LookupError(server)
    credential = McpCredential.objects.store(
        user_id=user_id, server_id=slot.server_id, token=token.strip()
    )
    return replace(slot, state="present", updated=credential.updated)


def oauth_endpoint(user_id: int, server: str) -> McpEndpoint:
    """The endpoint of ``server``, one ``user_id`` may connect their account to (``LookupError``:
    no such server open to them, or not an OAuth one)."""
    slot = next(
        (s for s in credential_slots(user_id) if s.name == server and s.in_use and s.oauth), None
    )
    if slot is None:
        raise LookupError(server)
    return endpoint_of(McpServer.objects.get(pk=slot.server_id), related=False)


def store_grant(user_id: int, server_id: int | None, grant: OAuthGrant) -> None:
    """Seal ``user_id``'s OAuth grant for the server (just connected, or refreshed)."""
    if server_id is None:
        return
    McpCredential.objects.update_or_create(
        user_id=user_id, server_id=server_id, defaults={"sealed": seal(grant.to_json())}
    )


def remove_credential(user_id: int, server: str) -> bool:
    """Forget ``user_id``'s token for ``server``; whether there was one."""
    deleted, _ = McpCredential.objects.filter(user_id=user_id, server__name=server).delete()
    return deleted > 0
