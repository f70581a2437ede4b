"""A running command's card: its output's last lines, reported at most every so often, while
the call runs; a carriage return starts a line over; nothing is reported once it ended."""

from __future__ import annotations

import asyncio

from agents.runtime.command_progress import LINE_CHARS, TAIL_LINES, OutputTail
from agents.runtime.registry import ToolContext
from agents.runtime.reports import ToolReport, ToolReports
from orkestrel.core import create_agent_context

from .commands import NO_SANDBOX, command_row, manager_for
from .helpers import call


def reporting_context(settings: dict | None = None) -> tuple[ToolContext, list[ToolReport]]:
    reports = ToolReports()
    heard: list[ToolReport] = []
    reports.on(heard.append)
    context = ToolContext(
        user_id=1,
        conversation_id="c-current",
        agent_context=create_agent_context(),
        settings=settings or {},
        reports=reports,
    )
    return context, heard


async def test_a_command_reports_the_tail_of_its_output_while_it_runs():
    script = "for i in $(seq 1 40); do echo line $i; done; echo oops >&2; sleep 0.5; echo last"
    row = command_row("sh", ["-c", script], safe=True)
    context, heard = reporting_context({"COMMAND_PROGRESS_SECONDS": 0.2})
    result = await call(manager_for(row, context, sandbox=NO_SANDBOX), "cmd")
    assert result.value["exit_code"] == 0
    displays = [report.display for report in heard]
    assert displays, "nothing was reported while the command ran"
    assert all(report.tool == "cmd" for report in heard)
    # Before "last": the 40 lines and the error line, only the last TAIL_LINES of them.
    before = next(d for d in displays if "oops" in d["lines"])
    assert before["kind"] == "command" and len(before["lines"]) == TAIL_LINES
    assert before["lines"][-2:] == ["line 40", "oops"]
    assert before["lines"][0] == f"line {40 - TAIL_LINES + 2}"
    assert isinstance(before["elapsed"], float)
    # Rate-limited: 42 lines in a burst are one or two reports, not 42.
    assert len(displays) <= 4


async def test_without_listeners_a_command_reports_nothing_and_still_runs():
    row = command_row("sh", ["-c", "echo quiet"], safe=True)
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert result.value["stdout"] == "quiet\n"


async def test_a_carriage_return_starts_the_line_over_and_lines_are_cut():
    heard: list[object] = []
    tail = OutputTail(heard.append, every=0)
    tail.feed("stdout", b"10%\r50%\r100%\n" + b"x" * (LINE_CHARS + 50) + b"\nhalf a li")
    tail.feed("stderr", b"warn\xc3")  # a character split across two reads
    tail.feed("stderr", b"\xa9\n")
    shown = tail.display()
    assert shown["lines"] == ["100%", "x" * LINE_CHARS, "warné", "half a li"]
    tail.close()
    tail.feed("stdout", b"after\n")
    assert tail.display()["lines"][-1] == "half a li"


async def test_what_came_in_the_last_interval_is_reported_when_it_ends():
    heard: list[dict] = []
    tail = OutputTail(heard.append, every=0.1)
    tail.feed("stdout", b"first\n")
    tail.feed("stdout", b"second\n")
    assert [d["lines"] for d in heard] == [["first"]]
    async with asyncio.timeout(2):
        while len(heard) < 2:
            await asyncio.sleep(0.02)
    assert heard[-1]["lines"] == ["first", "second"]
