"""Which API key the work of the current request is charged to.

A front door that authenticated a key says so (``charge_key``); the run or job it starts reads
it (``current_key``) and carries it on, to a worker too, so its ledger rows name the key. The
value is tied to the request that set it (its ``X-Request-ID``): a sync server's thread that
keeps its context into the next request, a session's, never charges that one to the key.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from orkestrel.request_scope import current_request_id

__all__ = ["KeyRef", "charge_key", "current_key"]


@dataclass(frozen=True, slots=True)
class KeyRef:
    """An API key by id and name: all a ledger row keeps of it."""

    id: int
    name: str

    def to_data(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name}

    @classmethod
    def from_data(cls, data: Any) -> KeyRef | None:
        if not isinstance(data, dict) or not isinstance(data.get("id"), int):
            return None
        return cls(data["id"], str(data.get("name") or ""))


_KEY: ContextVar[tuple[str | None, KeyRef] | None] = ContextVar("orkestrel_key", default=None)


def charge_key(key: KeyRef | None) -> None:
    """Charge what the current request starts to ``key`` (``None``: to no key)."""
    _KEY.set((current_request_id(), key) if key is not None else None)


def current_key() -> KeyRef | None:
    """The key the current request authenticated with, if any."""
    held = _KEY.get()
    if held is None or held[0] != current_request_id():
        return None
    return held[1]
