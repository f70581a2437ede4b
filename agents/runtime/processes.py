"""Run one child process bounded in time and output, and stop it with everything it started.

The child starts a session (and process group) of its own, so the whole group can be
signalled: on timeout every process of the group gets ``SIGTERM``, then, after a grace
period, ``SIGKILL``. A command that exits on its own takes whatever it left running with it
(``SIGKILL`` to the rest of its group), and so does a cancelled call. Only what a process
moves out of its group on purpose (``setsid``) escapes; under the sandbox it cannot, since
the sandbox's process namespace ends with it.

Standard output and error are read as they come, within one byte budget for both; past it
the rest is read and dropped (so the child never blocks on a full pipe) and counted. Every
piece read is also handed to ``on_output`` when given (a running command's card).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

__all__ = ["GRACE_SECONDS", "Finished", "group_members", "run_bounded"]

GRACE_SECONDS = 2.0
_POLL = 0.05
_SETTLE = 5.0  # how long to wait for a killed group, and for the pipes to close after it
_CHUNK = 65536


@dataclass(frozen=True, slots=True)
class Finished:
    """How a bounded run ended.

    ``returncode`` is the child's (negative: the signal that ended it); ``dropped`` counts
    output bytes past the limit; ``timed_out`` says the run hit its time limit, ``killed``
    that it then needed ``SIGKILL`` (it outlived the grace period).
    """

    returncode: int | None
    stdout: bytes
    stderr: bytes
    dropped: int = 0
    timed_out: bool = False
    killed: bool = False


class _Output:
    """Both streams' bytes within one shared budget."""

    def __init__(self, limit: int, listener: Callable[[str, bytes], None] | None = None) -> None:
        self.listener = listener
        self.left = limit
        self.dropped = 0
        self.streams: dict[str, bytearray] = {"stdout": bytearray(), "stderr": bytearray()}

    async def drain(self, name: str, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        kept = self.streams[name]
        while chunk := await stream.read(_CHUNK):
            if self.listener is not None:
                self.listener(name, chunk)
            take = min(len(chunk), self.left)
            kept.extend(chunk[:take])
            self.left -= take
            self.dropped += len(chunk) - take


def _stat(pid: str) -> tuple[int, str] | None:
    """A process's group and state from ``/proc/<pid>/stat``, or ``None`` if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            text = file.read().decode("ascii", "replace")
    except OSError:
        return None
    # "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses.
    fields = text[text.rfind(")") + 2 :].split()
    return int(fields[2]), fields[0]


def group_members(pgid: int) -> list[int] | None:
    """The live (not zombie) processes of group ``pgid``; ``None`` where ``/proc`` is absent."""
    try:
        pids = [entry for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return None
    members = []
    for pid in pids:
        found = _stat(pid)
        if found is not None and found[0] == pgid and found[1] != "Z":
            members.append(int(pid))
    return members


def _alive(pgid: int) -> bool:
    members = group_members(pgid)
    if members is not None:
        return bool(members)
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _signal(pgid: int, signum: int, spare: int | None = None) -> None:
    """Send ``signum`` to group ``pgid``, to all of it but ``spare`` when that is given."""
    members = group_members(pgid) if spare is not None else None
    if members is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
        return
    for pid in members:
        if pid != spare:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signum)


async def _until_gone(pgid: int, seconds: float) -> bool:
    """Wait up to ``seconds`` for group ``pgid`` to have no live process; whether it has none."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while _alive(pgid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(_POLL)
    return True


async def _stop(pgid: int, grace: float, spare: int | None) -> bool:
    """``SIGTERM``, the grace period, then ``SIGKILL``; whether ``SIGKILL`` was needed."""
    _signal(pgid, signal.SIGTERM, spare)
    if await _until_gone(pgid, grace):
        return False
    _signal(pgid, signal.SIGKILL)
    await _until_gone(pgid, _SETTLE)
    return True


async def run_bounded(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    time_limit: float,
    output_limit: int,
    grace: float = GRACE_SECONDS,
    supervised: bool = False,
    on_output: Callable[[str, bytes], None] | None = None,
) -> Finished:
    """Run ``argv`` to its end or its ``time_limit`` (seconds), keeping ``output_limit`` bytes.

    ``supervised``: the child is a supervisor that tears everything down when it gets
    ``SIGTERM`` (bubblewrap): the terminate signal then goes to the rest of its group only,
    so the command itself gets its grace period. ``on_output`` hears every piece read, with
    its stream's name (``stdout`` or ``stderr``), past the output limit too.
    """
    process = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )
    pgid = process.pid  # a new session's leader leads its process group
    output = _Output(output_limit, on_output)
    readers = [
        asyncio.create_task(output.drain("stdout", process.stdout)),
        asyncio.create_task(output.drain("stderr", process.stderr)),
    ]
    timed_out = killed = False
    try:
        try:
            async with asyncio.timeout(time_limit):
                await process.wait()
        except TimeoutError:
            timed_out = True
            killed = await _stop(pgid, grace, pgid if supervised else None)
        if _alive(pgid):
            # What the command left running when it ended.
            _signal(pgid, signal.SIGKILL)
            await _until_gone(pgid, _SETTLE)
        await process.wait()
        # The pipes close once every process holding them is gone; one that left the group
        # on purpose may keep them open, so the wait is bounded.
        await asyncio.wait(readers, timeout=_SETTLE)
    finally:
        if process.returncode is None:  # cancelled: stop at once
            _signal(pgid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), _SETTLE)
        for reader in readers:
            reader.cancel()
    return Finished(
        returncode=process.returncode,
        stdout=bytes(output.streams["stdout"]),
        stderr=bytes(output.streams["stderr"]),
        dropped=output.dropped,
        timed_out=timed_out,
        killed=killed,
    )
