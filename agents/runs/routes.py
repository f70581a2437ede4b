"""Where the relay sends a tick's frames: one message per listening process, carrying every
conversation it follows, or the conversation's group.

A process takes its layer messages one Redis round trip (several, with channels-redis's
backup queue) each: a web process following 200 runs of a worker, one message per
conversation per tick, fell seconds behind (``bench/README.md``). So every frame of a
conversation whose listening processes are known goes into one batch per such process. The
conversation's group, which reaches each following process once, gets the frames of a
conversation no known process listens to and of a run in its grace period (a process that
has not answered the probe yet). A process that listens without having said so sees a gap
once it is counted and resyncs. A process receives both kinds on its one relay channel, in
the order they were sent.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DELTAS", "Plan", "Routes"]

# The frames that are most of the traffic; every other kind is rare and always shared.
DELTAS = frozenset({"token", "think", "tool_call"})

Frames = list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Plan:
    """One tick's sends: ``groups`` by conversation, ``batches`` by process channel (each by
    conversation)."""

    groups: dict[str, Frames] = field(default_factory=dict)
    batches: dict[str, dict[str, Frames]] = field(default_factory=dict)


class Routes:
    """The process channels that listen to each conversation this process runs."""

    def __init__(self) -> None:
        self._listeners: dict[str, set[str]] = {}

    def add(self, conversation_id: str, channel: str) -> None:
        """``channel`` (a process's relay channel) listens to the conversation."""
        self._listeners.setdefault(conversation_id, set()).add(channel)

    def listened(self, conversation_id: str) -> bool:
        """Whether any process is known to listen to the conversation."""
        return bool(self._listeners.get(conversation_id))

    def forget(self, conversation_id: str) -> None:
        """The conversation's run settled: its next run asks again."""
        self._listeners.pop(conversation_id, None)

    def drop(self, channel: str) -> None:
        """``channel`` is gone (full: its process died): it listens to nothing any more."""
        for conversation_id in [c for c, chans in self._listeners.items() if channel in chans]:
            self._listeners[conversation_id].discard(channel)
            if not self._listeners[conversation_id]:
                del self._listeners[conversation_id]

    def plan(self, pending: dict[str, Frames], broadcast: Callable[[str], bool]) -> Plan:
        """Route each conversation's ``pending`` frames; ``broadcast(conversation)`` sends it
        to the group whatever is known (its grace period)."""
        plan = Plan()
        for conversation_id, frames in pending.items():
            channels = self._listeners.get(conversation_id)
            if not channels or broadcast(conversation_id):
                plan.groups[conversation_id] = frames
                continue
            for channel in channels:
                plan.batches.setdefault(channel, {})[conversation_id] = frames
        return plan
