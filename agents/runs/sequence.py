"""A conversation's runs one after another: followed in order, across runs, from any frame.

A conversation runs one run at a time; the next one starts when a person sends, decides a
held call, or when messages sent meanwhile wait (the run that ends starts it). A follower of
the conversation reads each run's frames to its end, then waits for the run after it
(woken by the ``started`` frame this process fans out, and looking in the database every
``LOOK_SECONDS`` for runs started in other processes). A position is a run and a frame's
``seq`` in it (``Position``): the event id of the conversation's stream.

A message sent while a run is going (pending) joins that run at its next model request, or
the next run takes it; which one is known only as the runs go (the model decides whether
another request follows). ``Awaited`` follows the runs from the going one to the one that
took the message: a run took it when, after it was queued, the run took pending messages at
a turn (a ``committed`` user message) or started with them (its ``started`` message).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conversations.models import PendingMessage, Run
from orkestrel.db import in_thread

if TYPE_CHECKING:
    from .service import RunService

__all__ = [
    "Awaited",
    "Position",
    "SLOT_STATUSES",
    "follow_runs",
    "next_run",
    "run_of_conversation",
    "slot_run",
]

# How often a follower waiting for a conversation's next run looks in the database: a run
# another process started sends no frame this process fans out.
LOOK_SECONDS = 1.0
# The statuses of a run holding its conversation's slot (a paused run holds it too).
SLOT_STATUSES = ("queued", "running", "awaiting_approval", "awaiting_input")


@dataclass(frozen=True, slots=True)
class Position:
    """A frame of a conversation's stream: its run, and its ``seq`` in that run (0: before
    the run's first frame)."""

    run: int
    seq: int

    def __str__(self) -> str:
        return f"{self.run}.{self.seq}"

    @classmethod
    def parse(cls, text: str) -> Position:
        """The position an event id names (``ValueError`` for anything else)."""
        run, dot, seq = text.strip().partition(".")
        if not dot or not run.isdigit() or not seq.isdigit():
            raise ValueError(f"not an event id of this stream: {text!r}")
        return cls(int(run), int(seq))


@dataclass(frozen=True, slots=True)
class Awaited:
    """A pending message and where to look for its answer: ``run`` held the conversation when
    the message was queued (``None``: none did; the next run after ``floor`` takes it), and
    ``after`` is how many of its frames were out then (``None``: unknown, it runs elsewhere;
    then it took the message if it took any and the message is gone when it ended)."""

    pending: int
    run: int | None
    after: int | None
    floor: int | None = None


def slot_run(conversation_id: str) -> tuple[int | None, int | None]:
    """The run holding the conversation's slot (queued, running or paused for approvals),
    and the conversation's latest run; each ``None`` when there is none."""
    runs = Run.objects.filter(conversation_id=conversation_id)
    holder = runs.filter(status__in=SLOT_STATUSES).order_by("-id").values_list("id", flat=True)
    latest = runs.order_by("-id").values_list("id", flat=True)
    return holder.first(), latest.first()


def next_run(conversation_id: str, after: int | None) -> int | None:
    """The conversation's first run after run ``after`` (``None``: its first run)."""
    runs = Run.objects.filter(conversation_id=conversation_id)
    if after is not None:
        runs = runs.filter(id__gt=after)
    return runs.order_by("id").values_list("id", flat=True).first()


def run_of_conversation(conversation_id: str, run_id: int) -> bool:
    """Whether run ``run_id`` is one of the conversation's."""
    return Run.objects.filter(conversation_id=conversation_id, id=run_id).exists()


def _waiting(pending_id: int) -> bool:
    return PendingMessage.objects.filter(id=pending_id).exists()


def _took_pending(frame: dict[str, Any], *, at_start: bool = True) -> bool:
    """Whether ``frame`` shows its run taking pending messages (as its message, when
    ``at_start`` counts, or between turns: a user message committed mid-run)."""
    if frame.get("type") == "started":
        return at_start and frame.get("message") is not None
    if frame.get("type") == "committed":
        return any(message.get("role") == "user" for message in frame.get("messages", ()))
    return False


async def follow_runs(
    service: RunService,
    conversation_id: str,
    start: Position | None,
    *,
    idle: float,
    awaited: Awaited | None = None,
) -> AsyncIterator[list[dict[str, Any]] | None]:
    """The frames of the conversation's runs in order, in batches as ``follow_batches``
    gives them (``None``: ``idle`` seconds without a frame), from after ``start`` (``None``:
    from the run going now, else the next to start); with ``awaited``, from the frames out
    when the message was queued, to the end of the run that took it. Without ``awaited`` it
    never ends: the caller stops reading."""
    wake = asyncio.Event()
    # A refused start from pending messages (an ``error`` frame of no run): the follower is
    # told while it waits for the run that did not come (the messages stay pending).
    refusals: list[dict[str, Any]] = []

    async def woken(frame: dict[str, Any]) -> None:
        if frame.get("type") == "started":
            wake.set()
        elif frame.get("type") == "error" and frame.get("run") is None:
            refusals.append(frame)
            wake.set()

    unsubscribe = service.manager.subscribe(conversation_id, woken)
    try:
        run, seq, floor = await _first(conversation_id, start, awaited)
        taken = awaited is None
        # The run going when the message was queued started before it: only its later takes.
        at_start = False
        while True:
            if run is None:
                found = await _next(
                    service, conversation_id, floor, wake, idle, awaited, lambda: bool(refusals)
                )
                told, refusals[:] = list(refusals), []
                if told:
                    yield told
                if found is None:
                    return  # the awaited message was taken back: no run answers it
                if isinstance(found, _Quiet):
                    if not told:
                        yield None
                    continue
                run, seq = found, 0
                # A run that started after the message was queued takes it with the others.
                taken, at_start = awaited is None, True
            async for batch in service.follow_batches(run, after=seq, idle=idle):
                if batch is not None and not taken:
                    taken = any(_took_pending(frame, at_start=at_start) for frame in batch)
                yield batch
            if awaited is not None and await _answered(awaited, run, taken):
                return
            floor, run = run, None
    finally:
        unsubscribe()


async def _first(
    conversation_id: str, start: Position | None, awaited: Awaited | None
) -> tuple[int | None, int, int | None]:
    """Where a follow begins: a run and the frames of it already read (``None``: the next
    run after the third value)."""
    if start is not None:
        return start.run, start.seq, None
    if awaited is not None:
        return awaited.run, awaited.after or 0, awaited.floor
    holder, latest = await in_thread(slot_run)(conversation_id)
    return holder, 0, latest


class _Quiet:
    """No next run yet after ``idle`` seconds: the follower's cue for a keep-alive."""


async def _next(
    service: RunService,
    conversation_id: str,
    after: int | None,
    wake: asyncio.Event,
    idle: float,
    awaited: Awaited | None,
    refused: Callable[[], bool],
) -> int | _Quiet | None:
    """The run after ``after``, once it exists; ``_Quiet`` after ``idle`` seconds without
    one, or as soon as ``refused`` (a start was refused); ``None`` when the awaited message
    is gone with no run after to have taken it."""
    loop = asyncio.get_running_loop()
    quiet = loop.time() + idle
    while True:
        wake.clear()
        found = await in_thread(next_run)(conversation_id, after)
        if found is not None:
            return found
        if awaited is not None and not await in_thread(_waiting)(awaited.pending):
            # Taken back, or taken by a run that has just started: look once more.
            return await in_thread(next_run)(conversation_id, after)
        left = quiet - loop.time()
        if left <= 0 or refused():
            return _Quiet()
        try:
            await asyncio.wait_for(wake.wait(), min(left, LOOK_SECONDS))
        except TimeoutError:
            pass


async def _answered(awaited: Awaited, run: int, taken: bool) -> bool:
    """Whether ``run``, now ended, took the awaited message (else a later run does)."""
    if run == awaited.run and awaited.after is None:
        # Held elsewhere when the message was queued: its takes cannot be placed before or
        # after it; the message being gone as it ended says it was among them.
        return taken and not await in_thread(_waiting)(awaited.pending)
    return taken
