"""A run's numbered frames: the log its followers replay, and the wait for the next frame.

Each frame the run sends gets the next ``seq`` (1, 2, ...), joins the log and goes at once to
``deliver`` (the manager's ordered publisher). A follower reads the frames after the ``seq`` it
has and, when there are none yet, waits for the next one; once the run settled and the log
was read to its end, the follow is over. The log is stored with the run when it settled.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from orkestrel.protocol import ServerFrame, ThinkFrame, TokenFrame, encode

__all__ = ["Deliver", "FrameLog"]

Deliver = Callable[[dict[str, Any]], None]


class FrameLog:
    """Every frame one run sent, in order: ``frames[n - 1]`` has ``seq`` n."""

    __slots__ = ("_deliver", "_more", "frames", "run_id", "seq", "settled")

    def __init__(self, run_id: int, deliver: Deliver) -> None:
        self.run_id = run_id
        self._deliver = deliver
        self.seq = 0
        self.frames: list[dict[str, Any]] = []
        self.settled = False
        # Set and replaced on every frame: followers wait on it for the next one.
        self._more = asyncio.Event()

    def emit(self, kind: Callable[..., ServerFrame], **fields: Any) -> None:
        """Number a frame of ``kind`` with the next ``seq``, log it and deliver it."""
        self._log(kind(run=self.run_id, seq=self.seq + 1, **fields))

    def text(self, kind: type[TokenFrame | ThinkFrame], content: str) -> None:
        """A ``token`` or ``think`` frame, as ``emit`` sends it (without the keywords' cost:
        most frames are text)."""
        self._log(kind(run=self.run_id, seq=self.seq + 1, content=content))

    def _log(self, frame: ServerFrame) -> None:
        # Counted once built: a frame that cannot be built leaves no gap in ``seq``.
        self.seq += 1
        data = encode(frame)
        self.frames.append(data)
        self._wake()
        self._deliver(data)

    def settle(self) -> None:
        """No frame comes after these: followers read what is left, then stop."""
        self.settled = True
        self._wake()

    def _wake(self) -> None:
        more, self._more = self._more, asyncio.Event()
        more.set()

    async def after(self, seq: int, idle: float | None = None) -> list[dict[str, Any]] | None:
        """The frames after ``seq``, waiting for the next one when there are none yet.

        Empty once the run has settled and every frame was read: the follow is over. ``None``
        when ``idle`` seconds passed with no frame (a follower's cue for a keep-alive).
        """
        while len(self.frames) <= seq and not self.settled:
            if idle is None:
                await self._more.wait()
                continue
            try:
                await asyncio.wait_for(self._more.wait(), idle)
            except TimeoutError:
                return None
        return self.frames[seq:]
