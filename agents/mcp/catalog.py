"""What each MCP server offers, cached per process.

A run's start reads the server's tools here and connects only on a miss (or at its first
call). An entry lives as long as the server's ``ttlMs`` says (2026-07-28; ``0``: list at
every run's start), else ``ORKESTREL["MCP_TOOLS_TTL"]`` seconds (300 by default); a change
the server announces (``list_changed``) drops it at once. An expired entry is still the best
guess of what a server that is down offers: its tools then fail with the server's error.
A server that takes each user's own token is listed per user; a user who cannot list it (they
entered no token yet) is shown the latest listing anyone's token got.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from .connection import Listing
from .endpoint import McpEndpoint, OfferedTool

__all__ = ["DEFAULT_TOOLS_TTL", "ToolCatalog", "catalog", "default_ttl"]

DEFAULT_TOOLS_TTL = 300.0


def default_ttl() -> float:
    """Seconds a listing stays fresh when the server does not say."""
    value = getattr(settings, "ORKESTREL", {}).get("MCP_TOOLS_TTL", DEFAULT_TOOLS_TTL)
    return float(value) if isinstance(value, int | float) and value >= 0 else DEFAULT_TOOLS_TTL


@dataclass(frozen=True, slots=True)
class _Entry:
    tools: tuple[OfferedTool, ...]
    expires: float


class ToolCatalog:
    """Listings by ``McpEndpoint.key``; safe to share between threads and event loops."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}
        # The latest listing of each server, whoever's credential listed it.
        self._latest: dict[int | None, tuple[OfferedTool, ...]] = {}
        # Whether each server (by key) said it has resources, at its latest listing.
        self._resources: dict[str, bool] = {}

    def fresh(self, endpoint: McpEndpoint) -> tuple[OfferedTool, ...] | None:
        """The server's tools while its listing is fresh, else ``None``."""
        with self._lock:
            entry = self._entries.get(endpoint.key)
        if entry is None or entry.expires <= self._clock():
            return None
        return entry.tools

    def last_known(self, endpoint: McpEndpoint) -> tuple[OfferedTool, ...]:
        """The latest listing, fresh or not; else another user's (a per-user server); else what
        an operator's check stored."""
        with self._lock:
            entry = self._entries.get(endpoint.key)
            latest = self._latest.get(endpoint.pk) if endpoint.per_user else None
        if entry is not None:
            return entry.tools
        return latest if latest is not None else endpoint.offered

    def store(self, endpoint: McpEndpoint, listing: Listing) -> None:
        """Keep ``listing`` for the server's ttl (or the default)."""
        ttl = listing.ttl_seconds if listing.ttl_seconds is not None else default_ttl()
        with self._lock:
            self._entries[endpoint.key] = _Entry(listing.tools, self._clock() + ttl)
            self._latest[endpoint.pk] = listing.tools
            self._resources[endpoint.key] = listing.resources

    def offers_resources(self, endpoint: McpEndpoint) -> bool:
        """Whether the server had resources when it was last listed (``False``: never listed)."""
        with self._lock:
            return self._resources.get(endpoint.key, False)

    def evict(self, endpoint: McpEndpoint) -> None:
        """Make the server's listing stale (it announced a change); kept as the last known."""
        with self._lock:
            entry = self._entries.get(endpoint.key)
            if entry is not None:
                self._entries[endpoint.key] = _Entry(entry.tools, float("-inf"))

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._latest.clear()
            self._resources.clear()


# The process's catalog (tests clear it between cases).
catalog = ToolCatalog()
