"""``ORKESTREL_RUNS_ON``: a web process refuses to start on workers it cannot reach, and what a
web process hands a worker comes back whole."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from agents.runs.handoff import Handoff
from agents.runtime.overrides import RunOverrides, Sampling
from conversations.approvals import Decided
from orkestrel.core import ToolDefinition

REPO = Path(__file__).resolve().parents[3]


def _start(tmp_path: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "DATABASE_URL": f"sqlite:///{tmp_path / 'runs-on.sqlite3'}",
            "SECRET_KEY": secrets.token_urlsafe(50),
            # Empty values also hide any in the checkout's .env (it never overwrites).
            "CELERY_BROKER_URL": "",
            "REDIS_URL": "",
        }
    )
    env.update(variables)
    return subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("variables", "says"),
    [
        (
            {"ORKESTREL_RUNS_ON": "workers", "REDIS_URL": "redis://127.0.0.1:1/0"},
            "set CELERY_BROKER_URL (",
        ),
        (
            {"ORKESTREL_RUNS_ON": "workers", "CELERY_BROKER_URL": "redis://127.0.0.1:1/1"},
            "set REDIS_URL (",
        ),
        ({"ORKESTREL_RUNS_ON": "worker"}, "it must be 'web' or 'workers'"),
    ],
)
def test_runs_on_workers_without_a_broker_and_a_shared_layer_refuses_to_start(
    tmp_path, variables, says
):
    done = _start(tmp_path, **variables)

    assert done.returncode != 0
    assert "ImproperlyConfigured: ORKESTREL_RUNS_ON" in done.stderr and says in done.stderr


def test_a_handoff_comes_back_from_its_json_as_it_was_sent():
    handoff = Handoff(
        run_id=7,
        user_id=3,
        conversation_id="0b0b6f2e-8d5c-4a43-9a3e-2f1a1c2b3d4e",
        message={"id": "m1", "role": "user", "content": "hi"},  # type: ignore[typeddict-item]
        nonce="n1",
        title="hi",
        overrides=RunOverrides(
            client_tools=(ToolDefinition("lookup", "Find it", {"type": "object"}),),
            sampling=Sampling(temperature=0.5, stop=("END",)),
            schema={"type": "object"},
            think="low",
            max_tokens=99,
            system="Be brief.",
            request={"model": "demo"},
        ),
        decisions=(Decided("c1", "write", {"path": "a"}, True, "", "alice"),),
    )

    assert Handoff.from_data(handoff.to_data()) == handoff
    assert handoff.started()["seq"] == 1 and handoff.started()["nonce"] == "n1"
