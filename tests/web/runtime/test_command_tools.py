"""Operator-defined command tools, with real processes: arguments, environment, limits, edits.

The sandbox's own confinement (file system, network, process group) is in
``test_command_sandbox.py``; these tests hold wherever a command runs.
"""

from __future__ import annotations

import os
import time

import pytest

from agents.models import Tool as ToolRow
from agents.runtime.command_tools import render_argv
from agents.runtime.processes import GRACE_SECONDS
from agents.runtime.toolset import build_tool
from agents.sandbox import Sandbox, detect_sandbox
from orkestrel.core import ToolManager, create_file, create_text_content

from .commands import NO_SANDBOX, command_row, manager_for
from .helpers import call, tool_context


def sandboxes() -> list[Sandbox]:
    """Each way a command can run here: confined (if this machine can), and unconfined."""
    found = detect_sandbox()
    return [found, NO_SANDBOX] if found.available else [NO_SANDBOX]


def mode(sandbox: Sandbox) -> str:
    return "sandboxed" if sandbox.available else "unconfined"


def lingering(marker: str) -> list[int]:
    """Processes whose command line holds ``marker`` (zombies have none)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as file:
                    if marker.encode() in file.read():
                        pids.append(int(entry))
            except OSError:
                continue
    return pids


# -- the argument list --


def test_placeholders_fill_one_argument_each_and_absent_ones_drop_theirs():
    argv = render_argv(
        ["-n", "{n}", "--label={text}", "--", "{text}", "{{literal}}", "--flag={flag}"],
        {"n": 3, "text": "a b; $(id)", "flag": None},
    )
    assert argv == ["-n", "3", "--label=a b; $(id)", "--", "a b; $(id)", "{literal}"]


def test_values_are_spelled_as_json_scalars_and_containers():
    argv = render_argv(["{a}", "{b}", "{c}", "{d}"], {"a": True, "b": 1.5, "c": [1, "x"], "d": {}})
    assert argv == ["true", "1.5", '[1,"x"]', "{}"]


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_a_value_reaches_the_program_as_one_argument_never_through_a_shell(sandbox):
    row = command_row("printf", ["%s|\n", "{text}", "--n={n}"], safe=True)
    result = await call(manager_for(row, sandbox=sandbox), "cmd", text="a  b; $(id) `x` *")
    assert result.error is None
    assert result.value["stdout"] == "a  b; $(id) `x` *|\n"  # --n= was left out: no n
    assert result.value["exit_code"] == 0 and result.value["status"] == "exited with 0"


async def test_the_schema_guards_the_arguments_before_anything_runs():
    row = command_row("true", [], safe=True)
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd", text=5)
    assert result.error == "invalid arguments at $.text: 5 is not of type 'string'"


async def test_a_program_gone_since_it_was_saved_is_a_clear_error():
    row = command_row("true", [], safe=True)
    row.program = "/nonexistent/orkestrel-program"
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert result.error == "program '/nonexistent/orkestrel-program' is not found on this server"


async def test_a_file_the_kernel_cannot_start_is_a_clear_error(tmp_path):
    row = command_row("true", [], safe=True)
    script = tmp_path / "not-a-program"
    script.write_text("no shebang, no binary\n")
    script.chmod(0o755)
    row.program = str(script)
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert result.error == f"cannot run {str(script)!r}: Exec format error"


async def test_a_command_row_becomes_a_guarded_tool_through_the_toolset():
    row = command_row("printf", ["%s", "{text}"], safe=True)
    tool = build_tool(row, tool_context())
    assert tool is not None and tool.safe is True
    result = await call(ToolManager(tool), "cmd", text="hi")
    assert result.value["stdout"] == "hi"


async def test_a_non_zero_exit_is_a_result_the_model_reads_not_an_error():
    row = command_row("sh", ["-c", "echo oops >&2; exit 3"], safe=True)
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert result.error is None
    assert result.value["exit_code"] == 3 and result.value["stderr"] == "oops\n"
    assert result.value["status"] == "exited with 3" and result.value["sandbox"] == "none"


# -- the environment --


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_no_variable_of_the_server_reaches_the_command(sandbox, monkeypatch):
    monkeypatch.setenv("ORKESTREL_FAKE_SECRET", "hunter2-not-for-commands")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-commands")
    row = command_row("env", [], safe=True)
    result = await call(manager_for(row, sandbox=sandbox), "cmd")
    lines = result.value["stdout"].splitlines()
    seen = dict(line.split("=", 1) for line in lines)
    # bubblewrap sets PWD, to the folder it changes into.
    assert set(seen) - {"PWD"} == {"PATH", "HOME", "LANG"}
    assert seen.get("PWD", seen["HOME"]) == seen["HOME"]
    assert seen["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert "hunter2" not in result.value["stdout"] and "sk-not" not in result.value["stdout"]
    home = seen["HOME"]
    assert os.path.basename(home).startswith("orkestrel-command-")
    assert not os.path.exists(home)  # the folder went with the call


# -- limits --


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_output_past_the_limit_is_cut_and_the_result_says_so(sandbox):
    row = command_row("sh", ["-c", "yes | head -c 100000"], safe=True, output_limit=1000)
    result = await call(manager_for(row, sandbox=sandbox), "cmd")
    assert result.value["stdout"] == "y\n" * 500
    assert result.value["truncated"] is True and result.value["exit_code"] == 0
    assert result.value["status"] == "exited with 0; output cut at 1000 bytes (99000 more dropped)"


async def test_stdout_and_stderr_share_the_limit():
    row = command_row("sh", ["-c", "printf 12345; printf 67890 >&2"], safe=True, output_limit=8)
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert len(result.value["stdout"]) + len(result.value["stderr"]) == 8
    assert result.value["truncated"] is True


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_a_command_past_its_timeout_is_killed_with_the_children_it_forked(sandbox):
    marker = f"987.{os.getpid() % 1000:03d}1"
    row = command_row("sh", ["-c", f"echo started; sleep {marker} & sleep {marker}"], safe=True)
    row.timeout = 0.5
    started = time.monotonic()
    result = await call(manager_for(row, sandbox=sandbox), "cmd")
    elapsed = time.monotonic() - started
    assert elapsed < row.timeout + GRACE_SECONDS + 1.5
    assert result.error is None
    assert result.value["timed_out"] is True and result.value["stdout"] == "started\n"
    assert result.value["status"] == "timed out after 0.5s: stopped with SIGTERM"
    assert lingering(marker) == []


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_a_group_that_ignores_sigterm_is_killed_after_the_grace_period(sandbox):
    marker = f"987.{os.getpid() % 1000:03d}2"
    script = f"trap '' TERM; echo started; sleep {marker} & sleep {marker}"
    row = command_row("sh", ["-c", script], safe=True)
    row.timeout = 0.5
    started = time.monotonic()
    result = await call(manager_for(row, sandbox=sandbox), "cmd")
    elapsed = time.monotonic() - started
    assert row.timeout + GRACE_SECONDS <= elapsed < row.timeout + GRACE_SECONDS + 1.5
    assert result.value["timed_out"] is True and result.value["stdout"] == "started\n"
    assert result.value["status"] == (
        "timed out after 0.5s: killed with SIGKILL after the 2s grace period"
    )
    assert lingering(marker) == []


@pytest.mark.parametrize("sandbox", sandboxes(), ids=mode)
async def test_the_grace_period_lets_a_command_finish_its_work(sandbox):
    marker = f"987.{os.getpid() % 1000:03d}3"
    script = f"trap 'echo cleaned up; exit 0' TERM; sleep {marker} & wait"
    row = command_row("sh", ["-c", script], safe=True)
    row.timeout = 0.5
    result = await call(manager_for(row, sandbox=sandbox), "cmd")
    assert result.value["stdout"] == "cleaned up\n"
    assert result.value["status"] == "timed out after 0.5s: stopped with SIGTERM"
    assert lingering(marker) == []


async def test_what_a_finished_command_left_running_is_stopped():
    marker = f"987.{os.getpid() % 1000:03d}4"
    row = command_row("sh", ["-c", f"sleep {marker} > /dev/null 2>&1 & echo done"], safe=True)
    started = time.monotonic()
    result = await call(manager_for(row, sandbox=NO_SANDBOX), "cmd")
    assert time.monotonic() - started < 5
    assert result.value["stdout"] == "done\n" and "timed_out" not in result.value
    assert lingering(marker) == []


# -- without a sandbox --


def seeded_context():
    context = tool_context()
    context.agent_context.workspaces.add(
        id="main", seed=[create_file("a.txt", create_text_content("alpha\n"))]
    )
    return context


async def test_a_tool_that_writes_is_refused_where_there_is_no_sandbox():
    context = seeded_context()
    row = command_row("sh", ["-c", "echo x > b.txt"], workdir="workspace")
    result = await call(manager_for(row, context, sandbox=NO_SANDBOX), "cmd")
    assert result.error == (
        "refused: 'cmd' is not marked safe (it may write), and tools that write run only "
        "under an OS sandbox; this server has none: bubblewrap (bwrap) is not installed: "
        "apt-get install bubblewrap"
    )
    assert [file.path for file in context.agent_context.workspaces.active.files()] == ["a.txt"]


async def test_a_safe_tool_runs_without_a_sandbox_on_a_copy_that_changes_nothing():
    context = seeded_context()
    row = command_row("sh", ["-c", "cat a.txt; echo x > b.txt; rm a.txt"], safe=True)
    row.workdir = ToolRow.Workdir.WORKSPACE
    result = await call(manager_for(row, context, sandbox=NO_SANDBOX), "cmd")
    assert result.value["stdout"] == "alpha\n" and result.value["sandbox"] == "none"
    assert "files" not in result.value
    workspace = context.agent_context.workspaces.active
    assert [file.path for file in workspace.files()] == ["a.txt"]
    assert workspace.read("a.txt") == "alpha\n"


async def test_a_scratch_folder_starts_empty():
    context = seeded_context()
    row = command_row("ls", ["-A"], safe=True)
    result = await call(manager_for(row, context, sandbox=NO_SANDBOX), "cmd")
    assert result.value["stdout"] == "" and result.value["exit_code"] == 0
