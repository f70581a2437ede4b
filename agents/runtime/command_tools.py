"""Operator-defined command tools: an ``agents.Tool`` row of kind ``command`` as a kit ``Tool``.

A call runs the row's program with an argument list built from the row's ``argv`` template:
each element is one argument, its ``{name}`` placeholders filled from the call's arguments,
never split and never seen by a shell; an element whose placeholder's argument is absent (or
null) is left out. The program runs in a folder of its own, empty or holding a copy of the
conversation's active workspace, with an environment of ``PATH``, ``HOME`` (the folder) and
``LANG`` only, in a process group of its own, bounded by the row's timeout (then ``SIGTERM``,
a grace period, ``SIGKILL`` to the whole group) and output limit (stdout and stderr together).
A row whose parameters declare ``timeout`` lets the model ask for a shorter limit per call
(``time_limits``); the grace period is the cleanup window ``ORKESTREL["TOOL_CLEANUP_SECONDS"]``
sets. While a call runs, its output's last lines reach its card (``command_progress``).

Where the machine has an OS sandbox (``agents.sandbox``) every call runs under it: no network
unless the row allows it, writes only inside its folder. A tool that is not ``safe`` runs only
there, as seed 004's WRITE CAPABILITY says: without a sandbox its calls are refused, with the
reason. A ``safe`` tool runs either way (unconfined without a sandbox: the file system and
network limits are then the program's own promise). Only a tool that is not ``safe``, working
on a copy of the workspace, brings its changes back: text files it created, changed or
deleted become edits of the workspace (saved with the run), listed in the result.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import signal
import string
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import PurePath
from typing import Any

from django.conf import settings

from orkestrel.core import Tool, Workspace, create_tool

from ..models import Tool as ToolRow
from ..sandbox import Sandbox, child_environment, detect_sandbox, resolve_program
from .arguments import format_seconds
from .command_progress import EVERY_SECONDS, OutputTail
from .processes import GRACE_SECONDS, Finished, run_bounded
from .registry import ToolContext
from .time_limits import asked_limit, cleanup_seconds, declares_timeout
from .workdirs import Changes, Copied, apply, changes, copy_in

__all__ = [
    "SLACK_SECONDS",
    "CommandToolError",
    "build_command_tool",
    "guard_timeout",
    "render_argv",
]

# The tool guard's own deadline stays behind the command's (timeout, grace, copying files).
SLACK_SECONDS = 30.0


class CommandToolError(RuntimeError):
    """A command tool call that could not run: refused, a missing program or argument."""


def guard_timeout(timeout: float, grace: float = GRACE_SECONDS) -> float:
    """The tool guard's deadline for a command of ``timeout`` seconds (``grace``: its cleanup
    window): only a backstop."""
    return timeout + grace + SLACK_SECONDS


def _text(value: Any) -> str:
    # JSON spelling for scalars a model sends (true, not True); containers as compact JSON.
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def render_argv(template: Sequence[str], arguments: Mapping[str, Any]) -> list[str]:
    """The argument list for one call: ``template``'s elements with placeholders filled.

    ``["-n", "{count}", "--", "{path}"]`` with ``{"count": 3, "path": "a b"}`` gives
    ``["-n", "3", "--", "a b"]``; ``{{`` and ``}}`` are literal braces.
    """
    argv: list[str] = []
    for element in template:
        pieces: list[str] = []
        complete = True
        for literal, name, _spec, _conversion in string.Formatter().parse(element):
            pieces.append(literal)
            if name is None:
                continue
            value = arguments.get(name)
            if value is None:
                complete = False
                break
            text = _text(value)
            if "\x00" in text:
                raise CommandToolError(f"argument {name!r} contains a NUL character")
            pieces.append(text)
        if complete:
            argv.append("".join(pieces))
    return argv


def _status(finished: Finished, timeout: float, grace: float, limit: int) -> str:
    if finished.timed_out:
        how = (
            f"killed with SIGKILL after the {format_seconds(grace)} grace period"
            if finished.killed
            else "stopped with SIGTERM"
        )
        status = f"timed out after {format_seconds(timeout)}: {how}"
    elif finished.returncode is not None and finished.returncode < 0:
        status = f"killed by {signal.Signals(-finished.returncode).name}"
    else:
        status = f"exited with {finished.returncode}"
    if finished.dropped:
        status += f"; output cut at {limit} bytes ({finished.dropped} more dropped)"
    return status


def _result(
    finished: Finished,
    *,
    timeout: float,
    grace: float,
    limit: int,
    sandbox: Sandbox,
    files: Changes | None,
) -> dict[str, Any]:
    value: dict[str, Any] = {
        "status": _status(finished, timeout, grace, limit),
        "exit_code": finished.returncode,
        "stdout": finished.stdout.decode("utf-8", errors="replace"),
        "stderr": finished.stderr.decode("utf-8", errors="replace"),
    }
    if finished.timed_out:
        value["timed_out"] = True
    if finished.dropped:
        value["truncated"] = True
    value["sandbox"] = sandbox.description if sandbox.available else "none"
    if files is not None:
        value["files"] = files.report()
    return value


class _Command:
    """One row's command, bound to a run's tool context."""

    def __init__(
        self,
        row: ToolRow,
        context: ToolContext,
        sandbox: Sandbox | None,
        hidden: Iterable[str | PurePath],
    ) -> None:
        self.name = row.name
        self.program = row.program
        self.template = [str(element) for element in row.argv or ()]
        self.copy = row.workdir == ToolRow.Workdir.WORKSPACE
        self.timeout = row.timeout
        # The model may ask for a shorter limit when the row's schema offers ``timeout``.
        self.asked = declares_timeout(row.parameters)
        self.grace = cleanup_seconds(context.settings)
        self.every = float(context.settings.get("COMMAND_PROGRESS_SECONDS", EVERY_SECONDS))
        self.limit = row.output_limit
        self.network = row.allow_network
        # The tool's own safety is a write: it needs the sandbox and its edits come back.
        self.safe = row.safety(False)
        self.context = context
        self.sandbox = sandbox
        self.hidden = tuple(hidden)

    async def _sandbox(self) -> Sandbox:
        if self.sandbox is None:
            # The first call in a process probes bubblewrap (a child process): off the loop.
            self.sandbox = await asyncio.to_thread(detect_sandbox)
        return self.sandbox

    def _workspace(self) -> Workspace | None:
        if not self.copy:
            return None
        # Read per call: the model may switch workspaces mid-run.
        workspace = self.context.agent_context.workspaces.active
        if workspace is None:
            raise CommandToolError("no active workspace to copy into the command's folder")
        return workspace

    async def run(self, arguments: Mapping[str, Any]) -> Any:
        """One call: refused, or run to its end; the result ``build_command_tool`` documents."""
        sandbox = await self._sandbox()
        if not self.safe and not sandbox.available:
            raise CommandToolError(
                f"refused: {self.name!r} is not marked safe (it may write), and tools that "
                f"write run only under an OS sandbox; this server has none: "
                f"{sandbox.description}"
            )
        program = resolve_program(self.program)
        if program is None:
            raise CommandToolError(f"program {self.program!r} is not found on this server")
        argv = [program, *render_argv(self.template, arguments)]
        workspace = self._workspace()
        time_limit = asked_limit(arguments, self.timeout) if self.asked else self.timeout
        reports = self.context.reports
        tail = (
            OutputTail(reports.reporter(self.name, arguments), every=self.every)
            if reports is not None
            else None
        )
        # The files are taken here, on the loop, where the run edits the workspace.
        files = workspace.files() if workspace is not None else ()
        folder = await asyncio.to_thread(tempfile.mkdtemp, prefix="orkestrel-command-")
        try:
            copied = await asyncio.to_thread(copy_in, files, folder)
            if sandbox.available:
                argv = sandbox.wrap(argv, workdir=folder, network=self.network, hidden=self.hidden)
            try:
                finished = await run_bounded(
                    argv,
                    cwd=folder,
                    env=child_environment(folder),
                    time_limit=time_limit,
                    output_limit=self.limit,
                    grace=self.grace,
                    supervised=sandbox.available,
                    on_output=tail.feed if tail is not None else None,
                )
            except OSError as error:  # not a program the kernel can start
                raise CommandToolError(
                    f"cannot run {program!r}: {error.strerror or error}"
                ) from error
            found = await self._changes(workspace, folder, copied, finished)
        finally:
            if tail is not None:
                tail.close()
            # Shielded: a cancelled call still removes its folder.
            await asyncio.shield(asyncio.to_thread(shutil.rmtree, folder, True))
        return _result(
            finished,
            timeout=time_limit,
            grace=self.grace,
            limit=self.limit,
            sandbox=sandbox,
            files=found,
        )

    async def _changes(
        self, workspace: Workspace | None, folder: str, copied: Copied, finished: Finished
    ) -> Changes | None:
        """The folder's changes, made in the workspace (a tool that writes, on a copy)."""
        if workspace is None or self.safe:
            return None
        if finished.timed_out:
            # Cut short, its files may be half written: none come back.
            return Changes(withheld="the command timed out")
        found = await asyncio.to_thread(changes, folder, copied)
        found.skipped[:0] = copied.skipped
        apply(found, workspace)  # on the loop, where the run reads the workspace
        return found


def build_command_tool(
    row: ToolRow,
    context: ToolContext,
    *,
    sandbox: Sandbox | None = None,
    hidden: Iterable[str | PurePath] | None = None,
) -> Tool:
    """The kit ``Tool`` for a ``command`` row (name, schema and texts from the row).

    A call's value is ``{status, exit_code, stdout, stderr, sandbox}``, with ``timed_out``
    and ``truncated`` when so, and ``files`` (``created``, ``modified``, ``deleted``, maybe
    ``skipped``) for a tool that is not safe working on a copy of the workspace. A non-zero
    exit is a value; a refusal, a missing program or argument is the call's error.

    ``sandbox`` defaults to this machine's (``detect_sandbox``, probed on the first call);
    ``hidden``: directories a sandboxed command cannot see, by default the project's.
    """
    command = _Command(row, context, sandbox, (settings.BASE_DIR,) if hidden is None else hidden)
    return create_tool(
        name=row.name,
        execute=command.run,
        description=row.description or None,
        summary=row.summary or None,
        parameters=row.parameters or None,
        safe=command.safe,
    )
