"""Every timing of the run machinery, in one value that a run manager is given.

Tests and benchmarks pass their own ``RunTimings``; nothing monkeypatches a module constant.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BURST_FRAMES",
    "CHECKPOINT_SECONDS",
    "DEFAULT_TIMINGS",
    "GAP_SECONDS",
    "LISTEN_GRACE_SECONDS",
    "REFILL",
    "TICK_SECONDS",
    "RunTimings",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunTimings:
    """How runs pace, checkpoint and reach other processes (seconds unless stated)."""

    # Text frames are paced to one per tick on average (20-50 ms keeps sockets and the layer
    # calm).
    tick: float = 0.02
    # Frames a run may send in a row before pacing applies (absorbs a stream's jitter), and the
    # least time between two: deltas that catch up after a stall share a frame.
    burst: int = 16
    gap: float = 0.005
    # Credit comes back this much faster than one per tick. A stream at exactly the tick rate
    # that fell behind (a stall spent its burst) would otherwise wait the same fraction of a
    # tick for every later delta; with 5 % it is level again within 20 ticks.
    refill: float = 1.05
    # How often every active run's in-flight text is saved (and its heartbeat moved): a crash
    # loses at most this much.
    checkpoint: float = 1.0
    # A run whose heartbeat is older than this is dead (its process was killed): the next
    # start on its conversation, or the sweep that runs this often, closes it as interrupted.
    stale: float = 10.0
    sweep: float = 5.0
    # A new run publishes its deltas to the shared layer for this long whatever it hears,
    # from its start and again once its probe is out: enough for idle sockets of other
    # processes to answer the probe (milliseconds), short enough that a burst of starts does
    # not publish every delta of its first second to processes that do not listen
    # (`bench/README.md`). After it, only the deltas of runs another process listens to are
    # published; every other frame always is, so a listener that answered late sees a gap at
    # the next one and resyncs, which registers it.
    listen_grace: float = 0.25
    # How long a joining socket waits for another process to describe its in-flight run.
    join_timeout: float = 2.0
    # Group sends to the shared layer in flight at once (per process).
    relay_sends: int = 32
    # How long frames for the layer gather before they go (0: at once). A worker's runs all
    # cross the layer, and a web process takes its messages one Redis round trip each: on
    # workers, frames wait this long so that each message carries several.
    relay_batch: float = 0.0


DEFAULT_TIMINGS = RunTimings()
TICK_SECONDS = DEFAULT_TIMINGS.tick
BURST_FRAMES = DEFAULT_TIMINGS.burst
GAP_SECONDS = DEFAULT_TIMINGS.gap
REFILL = DEFAULT_TIMINGS.refill
CHECKPOINT_SECONDS = DEFAULT_TIMINGS.checkpoint
LISTEN_GRACE_SECONDS = DEFAULT_TIMINGS.listen_grace
