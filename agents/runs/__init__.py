"""Runs belong to the server process, not to a socket.

A run is an asyncio task that drives one conversation's agent, paces its output into
numbered frames, delivers them to every socket on the conversation (directly in this
process; through the channel layer to other processes when the layer is shared), commits
each finished message at once and checkpoints the in-flight answer every second.

Modules: ``service`` (what front doors call: start, follow, cancel, wait), ``manager`` (the
runs' lifecycle), ``active`` (one streaming run, composed of ``frame_log``: its numbered
frames, replay and waits; ``chunk_frames``: its chunk stream mapped to frames, with
``markers`` and ``meter``; ``writes``: what it stores), ``pacing`` (when its next text frame may
go), ``fanout`` (delivery to this process's sockets), ``relay`` (the owner's half of the
cross-process relay, and each process's one relay channel), ``routes`` (where a tick's frames
cross the layer: one message per listening process), ``follow`` (following a run another
process holds, from a sequence number), ``checkpoints``, ``timings``, ``records`` (the
database rows and start-up recovery), ``payloads`` (frame payloads), ``groups`` (layer
groups). With
``ORKESTREL_RUNS_ON=workers`` runs execute on Celery workers: ``handoff`` (what a web process
hands a worker), ``workers`` (the rows: queueing, claiming, taking over), ``tasks`` (the task
and the worker's part).
"""

from .active import ActiveRun
from .groups import group_name, is_shared, join_group
from .interruptions import Interrupted, close_interrupted
from .manager import MANUAL_KEEP, Busy, RunManager, run_manager
from .payloads import committed_payload, compaction_payload
from .records import TITLE_LENGTH, ConversationSeed, RunRecord
from .service import TERMINAL, RunHandle, RunService, run_service
from .timings import (
    BURST_FRAMES,
    CHECKPOINT_SECONDS,
    GAP_SECONDS,
    LISTEN_GRACE_SECONDS,
    REFILL,
    TICK_SECONDS,
    RunTimings,
)

__all__ = [
    "BURST_FRAMES",
    "CHECKPOINT_SECONDS",
    "GAP_SECONDS",
    "LISTEN_GRACE_SECONDS",
    "REFILL",
    "MANUAL_KEEP",
    "TICK_SECONDS",
    "TITLE_LENGTH",
    "TERMINAL",
    "ActiveRun",
    "Busy",
    "ConversationSeed",
    "RunHandle",
    "RunRecord",
    "RunService",
    "RunTimings",
    "RunManager",
    "committed_payload",
    "group_name",
    "is_shared",
    "join_group",
    "close_interrupted",
    "Interrupted",
    "run_manager",
    "run_service",
    "compaction_payload",
]
