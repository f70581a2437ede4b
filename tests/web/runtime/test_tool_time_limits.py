"""A tool's time limit: the model's ``timeout`` argument within the tool's maximum, and the
cleanup window a timed-out call gets (a command: SIGTERM, then SIGKILL after the window; any
other tool: cancelled, then left behind); the model reads that the call timed out."""

from __future__ import annotations

import asyncio
import time

from agents.runtime.arguments import guard_tool
from agents.runtime.time_limits import MAX_CLEANUP_SECONDS, asked_limit, cleanup_seconds
from orkestrel.core import ToolManager, create_tool

from .commands import NO_SANDBOX, command_row, manager_for
from .helpers import call, tool_context

TIMED = {"type": "object", "properties": {"timeout": {"type": "number"}}}


async def test_a_command_runs_under_the_limit_the_model_asked_for():
    row = command_row("sh", ["-c", "echo started; sleep 30"], safe=True, parameters=TIMED)
    row.timeout = 20
    started = time.monotonic()
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd", timeout=0.3)
    assert time.monotonic() - started < 5
    assert result.value["timed_out"] is True
    assert result.value["status"] == "timed out after 0.3s: stopped with SIGTERM"


async def test_the_asked_limit_never_goes_past_the_tools_own():
    row = command_row("sh", ["-c", "sleep 30"], safe=True, parameters=TIMED)
    row.timeout = 0.3
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd", timeout=600)
    assert result.value["status"].startswith("timed out after 0.3s")


async def test_a_tool_whose_schema_has_no_timeout_ignores_one():
    assert asked_limit({"timeout": 1}, 30) == 1
    row = command_row("sh", ["-c", "echo {text}"], safe=True)
    row.timeout = 5
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd", text="hi")
    assert result.value["stdout"] == "hi\n"


async def test_the_cleanup_window_is_the_setting_and_sigkill_follows_it():
    script = "trap '' TERM; echo started; sleep 30"
    row = command_row("sh", ["-c", script], safe=True)
    row.timeout = 0.3
    context = tool_context(settings={"TOOL_CLEANUP_SECONDS": 0.4})
    started = time.monotonic()
    result = await call(manager_for(row, context, sandbox=NO_SANDBOX), "cmd")
    elapsed = time.monotonic() - started
    assert 0.7 <= elapsed < 2.5
    assert result.value["status"] == (
        "timed out after 0.3s: killed with SIGKILL after the 0.4s grace period"
    )


def test_the_cleanup_window_is_at_most_a_minute():
    assert cleanup_seconds({"TOOL_CLEANUP_SECONDS": 600}) == MAX_CLEANUP_SECONDS == 60
    assert cleanup_seconds({"TOOL_CLEANUP_SECONDS": -1}) == 0
    assert cleanup_seconds({}) == 2.0


async def test_any_tool_timed_out_is_cancelled_and_may_clean_up_in_its_window():
    cleaned = asyncio.Event()

    async def slow(arguments):
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # its cleanup takes a moment
            cleaned.set()
            raise

    tool = create_tool(name="slow", execute=slow, parameters=TIMED)
    manager = ToolManager(guard_tool(tool, timeout=10, cleanup=1.0))
    result = await call(manager, "slow", timeout=0.1)
    assert result.error == "timed out after 0.1s"
    assert cleaned.is_set()


async def test_a_tool_that_outlives_its_cleanup_window_is_left_behind_and_says_so():
    release = asyncio.Event()

    async def stubborn(arguments):
        while not release.is_set():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                await release.wait()

    tool = create_tool(name="stubborn", execute=stubborn)
    manager = ToolManager(guard_tool(tool, timeout=0.1, cleanup=0.1))
    started = time.monotonic()
    result = await call(manager, "stubborn")
    assert time.monotonic() - started < 2
    assert result.error == "timed out after 0.1s; it did not stop within its 0.1s cleanup window"
    release.set()
