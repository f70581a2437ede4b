"""The README's REST quickstart, pasted line by line on a fresh install, works: its ``bash``
block (the one that runs ``manage.py create_user``) is read out of README.md, so a change to
the README is a change to this test, and run in one shell against a server started as
``make run`` starts it (migrate, bootstrap, ``python -m orkestrel.server``; SQLite in a
temporary folder). Every command's answer is checked; a command no check knows fails the test,
and so does a check whose command left the README.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.live_app import REPO, live_app

README = REPO / "README.md"
DEFAULT_ORIGIN = "http://127.0.0.1:8000"
BLOCK = re.compile(r"```bash\n(.*?)```", re.DOTALL)


def quickstart() -> list[str]:
    """The quickstart's commands in order: continued lines joined, comments dropped."""
    blocks = [block for block in BLOCK.findall(README.read_text()) if "create_user" in block]
    assert len(blocks) == 1, "README.md should have one bash block running create_user"
    commands: list[str] = []
    pending = ""
    for line in blocks[0].splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        commands.append(pending + line)
        pending = ""
    assert not pending, "the block ends inside a continued line"
    return commands


def sse_data(text: str) -> list[dict]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def sse_ids(text: str) -> list[int]:
    return [int(line[4:]) for line in text.splitlines() if line.startswith("id: ")]


@dataclass(frozen=True)
class Step:
    """What one command of the quickstart must answer (its ``stdout``; ``env``: the shell's
    variables after it)."""

    matches: Callable[[str], bool]
    check: Callable[[str, dict[str, str]], None]


def _created_user(out: str, env: dict[str, str]) -> None:
    assert "Created user 'alice'" in out and "password" in out, out


def _key(out: str, env: dict[str, str]) -> None:
    assert env["KEY"].startswith("ork_"), env["KEY"]


def _header(out: str, env: dict[str, str]) -> None:
    assert env["H"] == f"Authorization: Bearer {env['KEY']}"


def _profiles(out: str, env: dict[str, str]) -> None:
    assert "demo" in [profile["slug"] for profile in json.loads(out)["results"]], out


def _conversation(out: str, env: dict[str, str]) -> None:
    assert re.fullmatch(r"[0-9a-f-]{32,36}", env["C"]), env["C"]


def _sent(out: str, env: dict[str, str]) -> None:
    body = json.loads(out)
    assert body["id"] == 1 and body["status"] in ("queued", "running", "done"), body
    assert body["message"]["content"] == "hello", body


def _streamed(out: str, env: dict[str, str]) -> None:
    frames = sse_data(out)
    assert frames[0]["type"] == "started" and frames[-1]["type"] == "finish", out[-500:]
    assert "".join(f.get("content", "") for f in frames if f["type"] == "token"), out[-500:]


def _run(out: str, env: dict[str, str]) -> None:
    body = json.loads(out)
    assert body["id"] == 1 and body["status"] == "done" and body["content"], body


def _resumed(out: str, env: dict[str, str]) -> None:
    ids = sse_ids(out)
    assert ids and min(ids) == 4, out[:500]  # exactly the events after Last-Event-ID: 3
    assert sse_data(out)[-1]["type"] == "finish", out[-500:]


def _cancelled(out: str, env: dict[str, str]) -> None:
    body = json.loads(out)  # run 1 settled long ago: nothing to stop, in the one error shape
    assert (body["status"], body["code"]) == (409, "not_running"), body


def _transcript(out: str, env: dict[str, str]) -> None:
    body = json.loads(out)
    said = [message["content"] for message in body["messages"] if message["role"] == "user"]
    assert said == ["hello", "and again"], body


def _found(out: str, env: dict[str, str]) -> None:
    body = json.loads(out)
    assert [hit["id"] for hit in body["results"]] == [env["C"]], body


STEPS = [
    Step(lambda c: "manage.py create_user alice" in c, _created_user),
    Step(lambda c: c.startswith("KEY="), _key),
    Step(lambda c: c.startswith("H="), _header),
    Step(lambda c: c.endswith("/api/profiles/"), _profiles),
    Step(lambda c: c.startswith("C="), _conversation),
    Step(lambda c: '"hello"' in c and "/messages/" in c, _sent),
    Step(lambda c: "text/event-stream" in c and "/messages/" in c, _streamed),
    Step(lambda c: re.search(r"/api/runs/1/\s*(#|$)", c) is not None, _run),
    Step(lambda c: "Last-Event-ID: 3" in c, _resumed),
    Step(lambda c: c.rstrip().endswith("/api/runs/1/cancel/"), _cancelled),
    Step(lambda c: re.search(r"/messages/\"\s*(#|$)", c) is not None, _transcript),
    Step(lambda c: "/search/?q=trip" in c, _found),
]


def script(commands: list[str], origin: str, outputs: Path) -> str:
    """One shell running the commands as pasted (the README's origin and interpreter swapped
    for the test server's and this one's), each command's output (and errors) to a file of
    its own and the shell's variables after it to another."""
    lines = ["set -u"]
    for index, command in enumerate(commands):
        pasted = command.replace(DEFAULT_ORIGIN, origin).replace(".venv/bin/python", sys.executable)
        out = shlex.quote(str(outputs / f"{index}.out"))
        errors = shlex.quote(str(outputs / f"{index}.err"))
        lines.append(f"{{ {pasted}\n}} > {out} 2> {errors}")
        variables = shlex.quote(str(outputs / f"{index}.env"))
        lines.append(
            f'printf "KEY=%s\\nH=%s\\nC=%s\\n" "${{KEY:-}}" "${{H:-}}" "${{C:-}}" > {variables}'
        )
    return "\n".join(lines) + "\n"


def test_every_command_of_the_quickstart_has_a_check_and_every_check_a_command():
    commands = quickstart()
    matched = [[step for step in STEPS if step.matches(command)] for command in commands]
    assert [len(steps) for steps in matched] == [1] * len(commands), list(
        zip(commands, matched, strict=True)
    )
    assert [steps[0] for steps in matched] == STEPS, "the README's commands changed order"


def test_the_quickstart_runs_as_written_on_a_fresh_install(tmp_path: Path):
    commands = quickstart()
    outputs = tmp_path / "steps"
    outputs.mkdir()
    with live_app(tmp_path, ORKESTREL_DEMO_WORD_DELAY="0") as app:
        done = subprocess.run(
            ["bash", "-c", script(commands, app.url, outputs)],
            cwd=REPO,
            env=dict(app.env),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    for index, command in enumerate(commands):
        (step,) = [step for step in STEPS if step.matches(command)]
        out = (outputs / f"{index}.out").read_text()
        env = dict(
            line.split("=", 1) for line in (outputs / f"{index}.env").read_text().splitlines()
        )
        try:
            step.check(out, env)
        except (AssertionError, ValueError, KeyError) as error:
            pytest.fail(
                f"step {index + 1} of the quickstart, {command!r}, answered:\n{out}\n{error}"
            )
