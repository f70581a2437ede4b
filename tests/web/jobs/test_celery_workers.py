"""Agent jobs on real Celery workers: a Daphne server sends them, worker processes run them.

Everything runs in processes of its own, as deployed: ``daphne`` serving the project (the REST
API's ``POST /api/jobs/`` sends the job to the broker), ``celery -A orkestrel worker``
processes (started, killed with ``SIGKILL`` and stopped by the tests), and a database they all
share: a fresh PostgreSQL database when ``DATABASE_URL`` names a PostgreSQL server (as CI's
does), else a SQLite file. The test process only talks HTTP to the server, reads rows through
``manage.py shell``, and sends a duplicate message through the broker now and then.

The broker is ``CELERY_BROKER_URL`` (Redis or RabbitMQ); without it the module is skipped. Each
run uses a queue of its own, deleted afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis
from kombu import Connection

from agents.jobs.service import RUN_JOB
from agents.schedules import HEADER, sign
from orkestrel.celery import app as celery_app
from tests.migrated import create_database, drop_database
from tests.processes import log_tail, stop_group

BROKER = os.environ.get("CELERY_BROKER_URL", "")
pytestmark = pytest.mark.skipif(
    not BROKER, reason="set CELERY_BROKER_URL (Redis or RabbitMQ) to run jobs on Celery workers"
)

REPO = Path(__file__).resolve().parents[3]
# The demo model's pause between words, and the job leases: a lost worker's job moves in
# about STALE + STALE / 2 seconds.
WORD_SECONDS = 0.02
HEARTBEAT = 0.25
STALE = 2.0
START_TIMEOUT = 60.0
TIMEOUT = 60.0
LONG = "word " * 250  # a job of about six seconds
SETTLED = {"done", "partial", "error", "cancelled"}

SETUP = """
import json
from django.contrib.auth import get_user_model
from django.core.management import call_command
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import ApiKey
call_command("migrate", verbosity=0, interactive=False)
ensure_demo_profile()
alice = get_user_model().objects.create_user(username="alice", password="alice-workers-7431")
print(json.dumps({"key": ApiKey.objects.issue(user=alice, name="workers")[1]}))
"""

ROWS = """
import json
from agents.models import AgentJob
rows = AgentJob.objects.filter(pk__in={ids!r})
print(json.dumps({{str(row.pk): {{
    "owner": row.owner, "status": row.status, "attempts": row.attempts,
    "created": row.created.timestamp(),
    "started": row.started and row.started.timestamp(),
    "finished": row.finished and row.finished.timestamp(),
}} for row in rows}}))
"""

# Two rows as they are left behind: a job an in-process server held when it died (its
# heartbeat long stale), and a job whose message never reached the broker (nobody holds it,
# and it has no heartbeat).
LEFT_BEHIND = """
import json
from datetime import timedelta
from django.contrib.auth import get_user_model
from django.utils import timezone
from agents.models import AgentJob, AgentProfile
alice = get_user_model().objects.get(username="alice")
demo = AgentProfile.objects.get(slug="demo")
def job(content, **fields):
    return str(AgentJob.objects.create(
        user=alice, profile=demo,
        job={"provider": "demo", "messages": [{"role": "user", "content": content}]},
        **fields,
    ).pk)
long_ago = timezone.now() - timedelta(minutes=5)
print(json.dumps({
    "orphan": job("left by a dead server", owner="web:1:dead", status="running", attempts=1,
                  heartbeat=long_ago, started=long_ago),
    "unsent": job("never reached the broker", owner="", heartbeat=None),
}))
"""


# -- the processes -------------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _bin(name: str) -> str:
    beside = Path(sys.executable).with_name(name)
    return str(beside if beside.exists() else REPO / ".venv" / "bin" / name)


def until[T](probe: Callable[[], T | None], what: str, timeout: float = TIMEOUT) -> T:
    """Poll ``probe`` until it answers something truthy; fail saying ``what`` did not come."""
    deadline = time.monotonic() + timeout
    while True:
        value = probe()
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


@dataclass
class Worker:
    """One ``celery -A orkestrel worker`` process (named ``<name>@<host>``)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def kill(self) -> None:
        """``kill -9``: nothing is acknowledged, nothing is cleaned up."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=10)

    def said(self, text: str) -> bool:
        return text in self.log.read_text(errors="replace")


@dataclass
class Stack:
    """The server, the database, the queue, and the workers started so far."""

    env: dict[str, str]
    folder: Path
    queue: str
    url: str
    key: str
    workers: list[Worker] = field(default_factory=list)

    def shell(self, code: str) -> str:
        done = subprocess.run(
            [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
            cwd=REPO,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        if done.returncode:
            pytest.fail(f"manage.py shell failed:\n{done.stdout}\n{done.stderr}")
        return done.stdout.strip().splitlines()[-1]

    def rows(self, *job_ids: str) -> dict[str, dict[str, Any]]:
        """The jobs' rows as stored: owner, status, attempts, times (epoch seconds)."""
        return json.loads(self.shell(ROWS.format(ids=list(job_ids))))

    def worker(self, name: str, concurrency: int = 4) -> Worker:
        """Start a worker and wait until it is consuming."""
        log = self.folder / f"worker-{name}-{len(self.workers)}.log"
        with log.open("ab") as sink:
            process = subprocess.Popen(
                [
                    _bin("celery"),
                    "-A",
                    "orkestrel",
                    "worker",
                    "--loglevel",
                    "INFO",
                    "--hostname",
                    f"{name}@%h",
                    "--concurrency",
                    str(concurrency),
                    "--without-gossip",
                    "--without-mingle",
                ],
                cwd=REPO,
                env=self.env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        worker = Worker(name, process, log)
        self.workers.append(worker)

        def ready() -> bool:
            if process.poll() is not None:
                pytest.fail(f"worker {name} exited with {process.returncode}:\n{log_tail(log)}")
            return worker.said(" ready.")

        until(ready, f"worker {name} to be ready:\n{log_tail(log)}", START_TIMEOUT)
        return worker

    def stop_workers(self) -> None:
        for worker in self.workers:
            stop_group(worker.process, grace=20.0)
        self.workers.clear()


@contextmanager
def _database(folder: Path) -> Iterator[str]:
    """A fresh database for the server and the workers: PostgreSQL's if that is configured."""
    configured = os.environ.get("DATABASE_URL", "")
    if not configured.startswith(("postgres://", "postgresql://")):
        yield f"sqlite:///{folder / 'workers.sqlite3'}"
        return
    url, name = create_database(configured, "orkestrel_workers_")
    try:
        yield url
    finally:
        drop_database(configured, name)


def _delete_queue(queue: str) -> None:
    """Delete the run's queue, and (Redis) its bindings and the messages killed workers left
    unacknowledged (Redis would deliver them again, to the deleted queue, an hour later)."""
    with Connection(BROKER) as connection:
        channel = connection.default_channel
        try:
            channel.queue_delete(queue)
        except Exception:  # noqa: BLE001 - nothing to delete
            pass
    if not BROKER.startswith(("redis://", "rediss://")):
        return  # RabbitMQ gave them back when their connections closed
    client = redis.Redis.from_url(BROKER)
    try:
        client.delete(f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        for tag, raw in client.hgetall("unacked").items():
            _, exchange, routing_key = json.loads(raw)
            if queue in (exchange, routing_key):
                client.hdel("unacked", tag)
                client.zrem("unacked_index", tag)
    finally:
        client.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    with started_stack(tmp_path_factory) as made:
        yield made


@contextmanager
def started_stack(
    tmp_path_factory: pytest.TempPathFactory, extra: dict[str, str] | None = None
) -> Iterator[Stack]:
    """The server and its database, with the environment's ``extra`` variables too (workers
    get the same)."""
    folder = tmp_path_factory.mktemp("workers")
    queue = f"orkestrel-test-{uuid.uuid4().hex[:10]}"
    with _database(folder) as database:
        env = dict(os.environ)
        env.pop("REDIS_URL", None)  # one server process: the in-memory channel layer
        env.update(
            {
                "DATABASE_URL": database,
                "CELERY_BROKER_URL": BROKER,
                "CELERY_TASK_DEFAULT_QUEUE": queue,
                "ORKESTREL_DEMO_WORD_DELAY": str(WORD_SECONDS),
                "ORKESTREL_JOB_HEARTBEAT_SECONDS": str(HEARTBEAT),
                "ORKESTREL_JOB_STALE_SECONDS": str(STALE),
                # The workers' scheduler looks for due schedules this often.
                "ORKESTREL_SCHEDULE_TICK_SECONDS": "0.25",
                "DEBUG": "false",
                "API_THROTTLE_RATE": "100000/min",  # the tests poll
                "SECRET_KEY": os.environ.get("SECRET_KEY") or "celery-workers-tests-only",
                "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
                "PYTHONUNBUFFERED": "1",
                **(extra or {}),
            }
        )
        made = Stack(env=env, folder=folder, queue=queue, url="", key="")
        made.key = json.loads(made.shell(SETUP))["key"]
        port = _free_port()
        log = folder / "daphne.log"
        with log.open("ab") as sink:
            server = subprocess.Popen(
                [_bin("daphne"), "-b", "127.0.0.1", "-p", str(port), "orkestrel.asgi:application"],
                cwd=REPO,
                env=env,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        made.url = f"http://127.0.0.1:{port}"
        try:

            def healthy() -> bool:
                if server.poll() is not None:
                    pytest.fail(f"daphne exited with {server.returncode}:\n{log_tail(log)}")
                try:
                    return httpx.get(f"{made.url}/healthz", timeout=2).status_code == 200
                except httpx.HTTPError:
                    return False

            until(healthy, f"daphne to answer /healthz:\n{log_tail(log)}", START_TIMEOUT)
            yield made
        finally:
            made.stop_workers()
            stop_group(server)
            _delete_queue(queue)


@pytest.fixture
def api(stack: Stack) -> Iterator[httpx.Client]:
    """The REST API as alice; the test's workers are stopped after it."""
    headers = {"Authorization": f"Bearer {stack.key}"}
    with httpx.Client(base_url=stack.url, headers=headers, timeout=30) as client:
        yield client
    stack.stop_workers()


def post_job(api: httpx.Client, content: str, **options: Any) -> dict[str, Any]:
    response = api.post(
        "/api/jobs/",
        json={"profile": "demo", "messages": [{"role": "user", "content": content}], **options},
    )
    assert response.status_code == 202, response.text
    return response.json()


def job_of(api: httpx.Client, job_id: str) -> dict[str, Any]:
    response = api.get(f"/api/jobs/{job_id}/")
    assert response.status_code == 200, response.text
    return response.json()


def settled(api: httpx.Client, job_id: str, timeout: float = TIMEOUT) -> dict[str, Any]:
    return until(
        lambda: (job := job_of(api, job_id))["status"] in SETTLED and job,
        f"job {job_id} to settle",
        timeout,
    )


def running(api: httpx.Client, job_id: str, attempts: int = 1) -> dict[str, Any]:
    """Wait until the job is running its ``attempts``-th attempt."""
    return until(
        lambda: (job := job_of(api, job_id))["status"] == "running"
        and job["attempts"] == attempts
        and job,
        f"job {job_id} to run attempt {attempts}",
    )


def send_again(stack: Stack, job_id: str) -> None:
    """A second message for the job, as a redelivery would bring it."""
    celery_app.send_task(RUN_JOB, args=[job_id], task_id=job_id, queue=stack.queue)


# -- the tests -----------------------------------------------------------------------------------


def test_a_job_posted_to_the_api_runs_on_a_worker_and_its_result_is_stored(stack, api):
    stack.worker("a")
    queued = post_job(api, "hello workers", retries=1)
    assert queued["status"] == "queued" and queued["attempts"] == 0
    done = settled(api, queued["id"])
    assert done["status"] == "done" and done["attempts"] == 1 and done["error"] is None
    assert done["result"]["content"].startswith("You said: hello workers")
    assert done["result"]["stop"] == "done" and done["result"]["partial"] is False
    assert done["options"]["retries"] == 1
    row = stack.rows(queued["id"])[queued["id"]]
    # The row names the worker that ran it, and when.
    assert row["owner"].startswith("a@")
    assert row["created"] <= row["started"] <= row["finished"]


def test_one_worker_runs_many_jobs_at_once(stack, api):
    stack.worker("a", concurrency=8)
    jobs = [post_job(api, f"job {n} " + "word " * 40)["id"] for n in range(8)]
    assert all(settled(api, job_id)["status"] == "done" for job_id in jobs)
    rows = stack.rows(*jobs).values()
    # Every job had started before the first one finished: all eight ran at the same time.
    assert max(row["started"] for row in rows) < min(row["finished"] for row in rows)
    assert {row["owner"] for row in rows} == {next(iter(rows))["owner"]}


def test_a_worker_killed_mid_job_leaves_it_to_another_which_runs_it_to_the_end(stack, api):
    first = stack.worker("a")
    job = post_job(api, LONG)
    running(api, job["id"])
    first.kill()
    stack.worker("b")
    done = settled(api, job["id"])
    # The lost attempt counts; the second ran to the end, on the other worker.
    assert done["status"] == "done" and done["attempts"] == 2
    assert done["result"]["content"].startswith("You said: " + LONG.strip())
    assert stack.rows(job["id"])[job["id"]]["owner"].startswith("b@")


def test_a_job_that_keeps_losing_its_workers_settles_as_worker_lost(stack, api):
    """With no retries a job survives one lost worker; the next loss settles it."""
    first = stack.worker("a")
    job = post_job(api, LONG, retries=0)
    running(api, job["id"])
    first.kill()
    second = stack.worker("b")
    running(api, job["id"], attempts=2)
    second.kill()
    stack.worker("c")
    lost = settled(api, job["id"])
    assert lost["status"] == "error" and lost["attempts"] == 2
    assert lost["error"]["code"] == "worker_lost"


def test_cancel_reaches_a_job_running_on_a_worker(stack, api):
    stack.worker("a")
    job = post_job(api, LONG)
    running(api, job["id"])
    asked = api.post(f"/api/jobs/{job['id']}/cancel/")
    assert asked.status_code == 202 and asked.json()["cancel_requested"] is True
    cancelled = settled(api, job["id"], timeout=15)
    assert cancelled["status"] == "cancelled" and cancelled["attempts"] == 1
    # What the agent had written when it stopped is kept.
    assert cancelled["result"]["stop"] == "abort" and cancelled["result"]["partial"] is True
    again = api.post(f"/api/jobs/{job['id']}/cancel/")
    assert again.status_code == 409


def test_a_message_for_a_settled_job_or_one_a_worker_holds_does_nothing(stack, api):
    a, b = stack.worker("a", concurrency=2), stack.worker("b", concurrency=2)
    short = post_job(api, "only once")
    done = settled(api, short["id"])
    before = stack.rows(short["id"])
    send_again(stack, short["id"])
    until(
        lambda: a.said(f"agent job {short['id']}: settled")
        or b.said(f"agent job {short['id']}: settled"),
        "the second message to find the job settled",
    )
    assert stack.rows(short["id"]) == before and job_of(api, short["id"]) == done

    long = post_job(api, LONG)
    running(api, long["id"])
    send_again(stack, long["id"])
    until(
        lambda: a.said(f"agent job {long['id']}: held") or b.said(f"agent job {long['id']}: held"),
        "the second message to find the job held",
    )
    finished = settled(api, long["id"])
    # Never two at once: the one attempt ran to the end.
    assert finished["status"] == "done" and finished["attempts"] == 1


def test_jobs_left_by_a_dead_server_or_never_sent_run_on_a_worker(stack, api):
    left = json.loads(stack.shell(LEFT_BEHIND))
    stack.worker("a")
    orphan, unsent = settled(api, left["orphan"]), settled(api, left["unsent"])
    assert orphan["status"] == "done" and orphan["attempts"] == 2
    assert orphan["result"]["content"].startswith("You said: left by a dead server")
    assert unsent["status"] == "done" and unsent["attempts"] == 1
    assert unsent["result"]["content"].startswith("You said: never reached the broker")


def test_schedules_start_their_jobs_on_the_workers_from_run_now_and_a_signed_webhook(stack, api):
    stack.worker("a")
    created = api.post(
        "/api/schedules/",
        json={"name": "yearly", "profile": "demo", "prompt": "hello", "cron": "0 0 1 1 *"},
    )
    assert created.status_code == 201, created.text
    schedule = created.json()
    # The admin's Run now: a request in the database that a worker's next tick takes.
    stack.shell(
        "from django.utils import timezone; from agents.models import Schedule; "
        f"print(Schedule.objects.filter(pk={schedule['id']!r}).update(run_requested=timezone.now()))"
    )

    def started() -> list[dict[str, Any]] | None:
        runs = api.get(f"/api/schedules/{schedule['id']}/runs/").json()["results"]
        return runs or None

    [run_now] = until(started, "a worker's tick to start the schedule")
    assert run_now["trigger"] == "run_now"
    done = settled(api, run_now["job"]["id"])
    assert done["status"] == "done"
    assert stack.rows(done["id"])[done["id"]]["owner"].startswith("a@")

    body = b'{"ref": "main"}'
    signature = sign(schedule["secret"], body, int(time.time()))
    assert schedule["webhook_url"].startswith(stack.url)
    hooked = httpx.post(
        schedule["webhook_url"],
        content=body,
        headers={HEADER: signature, "Content-Type": "application/json"},
    )
    assert hooked.status_code == 202, hooked.text
    assert settled(api, hooked.json()["id"])["status"] == "done"
    replayed = httpx.post(schedule["webhook_url"], content=body, headers={HEADER: signature})
    assert replayed.status_code == 409
