"""Agent jobs through Celery: jobs per second, and how long a job waits before a worker starts it.

This process plays the web server (its ``job_service`` sends each job to the broker, as
``POST /api/jobs/`` does); ``--workers`` real ``celery -A orkestrel worker`` processes run the
jobs, with the offline demo model answering at once (a scripted provider, no word delay), on a
scratch database all of them share. After a warm-up, ``--jobs`` jobs are sent as fast as the
service takes them; the figures come from the rows:

- throughput: jobs settled per second, from the first job stored to the last one settled;
- queueing delay: a job's ``started - created`` (stored, then sent, then claimed by a worker
  and started), at p50 and p99: in the burst it is mostly the backlog; a second phase sends
  ``--paced`` jobs at ``--rate`` per second, well under the throughput, where it is the path
  itself (store, broker, claim, start);
- run time: ``finished - started`` (claiming, building the agent, the demo turn, settling).

``--in-process`` runs the same jobs in this process instead (no broker: the embedded default),
for comparison.

Usage: ``.venv/bin/python bench/jobs_celery.py [--jobs N] [--paced N] [--rate R] [--workers W]
[--concurrency C] [--database-url URL] [--broker URL] [--in-process]`` (``make bench`` exports
a SECRET_KEY; set one otherwise). The broker defaults to ``CELERY_BROKER_URL``, else the local
Redis's database 1.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

import redis
from kombu import Connection
from scratch_db import ROOT, open_scratch_database

WARM_UP = 50
POLL_SECONDS = 0.05


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f} ms"


def start_workers(count: int, concurrency: int, folder: Path) -> list[subprocess.Popen[bytes]]:
    """``count`` workers on this process's environment, once each says it is ready."""
    celery = Path(sys.executable).with_name("celery")
    workers, logs = [], []
    for index in range(count):
        log = folder / f"worker-{index}.log"
        logs.append(log)
        with log.open("wb") as sink:
            workers.append(
                subprocess.Popen(
                    [
                        str(celery),
                        "-A",
                        "orkestrel",
                        "worker",
                        "--loglevel",
                        "INFO",
                        "--hostname",
                        f"bench{index}@%h",
                        "--concurrency",
                        str(concurrency),
                        "--without-gossip",
                        "--without-mingle",
                    ],
                    cwd=ROOT,
                    stdout=sink,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    deadline = time.monotonic() + 60
    while not all(" ready." in log.read_text(errors="replace") for log in logs):
        if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
            stop_workers(workers)
            tails = "\n".join(log.read_text(errors="replace")[-2000:] for log in logs)
            raise SystemExit(f"the workers did not start:\n{tails}")
        time.sleep(0.1)
    return workers


def stop_workers(workers: list[subprocess.Popen[bytes]]) -> None:
    for worker in workers:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGTERM)
    for worker in workers:
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)


def delete_queue(broker: str, queue: str) -> None:
    """Delete the run's queue (and on Redis the bindings kombu keeps beside it)."""
    with Connection(broker) as connection:
        connection.default_channel.queue_delete(queue)
    if broker.startswith(("redis://", "rediss://")):
        client = redis.Redis.from_url(broker)
        client.delete(f"_kombu.binding.{queue}", f"_kombu.binding_permanent.{queue}")
        client.close()


async def send(
    count: int, user_id: int, profile: object, rate: float = 0.0
) -> tuple[list[str], float]:
    """Enqueue ``count`` jobs, at once or ``rate`` a second; their ids and the seconds taken."""
    from agents.jobs import JobRequest, job_service

    async def one(index: int) -> str:
        if rate:
            await asyncio.sleep(index / rate)
        row = await job_service.enqueue(
            user_id=user_id,
            request=JobRequest(
                profile=profile,  # type: ignore[arg-type]
                messages=[{"role": "user", "content": f"bench job {index}"}],
            ),
        )
        return str(row.pk)

    began = time.perf_counter()
    job_ids = await asyncio.gather(*(one(index) for index in range(count)))
    return list(job_ids), time.perf_counter() - began


async def settle(job_ids: list[str]) -> list[tuple[float, float, float, str]]:
    """Wait until every job has settled; each one's created, started, finished and status."""
    from asgiref.sync import sync_to_async

    from agents.models import AgentJob

    @sync_to_async
    def open_count() -> int:
        return AgentJob.objects.filter(pk__in=job_ids, status__in=AgentJob.OPEN).count()

    @sync_to_async
    def times() -> list[tuple[float, float, float, str]]:
        rows = AgentJob.objects.filter(pk__in=job_ids).values_list(
            "created", "started", "finished", "status"
        )
        return [(c.timestamp(), s.timestamp(), f.timestamp(), st) for c, s, f, st in rows]

    while True:
        if not await open_count():
            return await times()
        await asyncio.sleep(POLL_SECONDS)


async def measure(jobs: int, paced: int, rate: float, where: str) -> None:
    from asgiref.sync import sync_to_async
    from django.contrib.auth import get_user_model
    from django.db import connection

    from agents.jobs import job_service
    from agents.management.commands.bootstrap import ensure_demo_profile
    from agents.models import AgentProfile

    def setup() -> tuple[int, object]:
        # A database used before has its demo profile already.
        profile = ensure_demo_profile() or AgentProfile.objects.get(slug="demo")
        user, _ = get_user_model().objects.get_or_create(username="bench")
        return user.pk, profile

    user_id, profile = await sync_to_async(setup)()
    warm, _ = await send(WARM_UP, user_id, profile)
    await settle(warm)
    job_ids, sending = await send(jobs, user_id, profile)
    rows = await settle(job_ids)
    paced_ids, _ = await send(paced, user_id, profile, rate)
    paced_rows = await settle(paced_ids)
    await job_service.shutdown()

    created = [row[0] for row in rows]
    waits = [started - made for made, started, _, _ in rows]
    runs = [finished - started for _, started, finished, _ in rows]
    span = max(row[2] for row in rows) - min(created)
    statuses = {status for *_, status in rows}
    print(f"where         {where}; database {connection.vendor}")
    print(f"jobs          {jobs} (after {WARM_UP} to warm up), statuses {sorted(statuses)}")
    print(f"sent          {jobs / sending:8.0f} jobs/s   ({sending:.2f} s to store and send)")
    print(f"throughput    {jobs / span:8.0f} jobs/s   (first stored to last settled: {span:.2f} s)")
    print(f"queue delay   p50 {ms(percentile(waits, 0.5))}   p99 {ms(percentile(waits, 0.99))}")
    print(f"run time      p50 {ms(percentile(runs, 0.5))}   p99 {ms(percentile(runs, 0.99))}")
    print(f"              mean run {ms(statistics.fmean(runs))}")
    waits = [started - made for made, started, _, _ in paced_rows]
    print(f"paced         {paced} jobs at {rate:.0f}/s")
    print(f"queue delay   p50 {ms(percentile(waits, 0.5))}   p99 {ms(percentile(waits, 0.99))}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=1000, help="the burst")
    parser.add_argument("--paced", type=int, default=300, help="jobs sent at --rate")
    parser.add_argument("--rate", type=float, default=50.0, help="jobs per second")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--database-url", default="")
    parser.add_argument(
        "--broker",
        default=os.environ.get("CELERY_BROKER_URL") or "redis://127.0.0.1:6379/1",
    )
    parser.add_argument("--in-process", action="store_true", help="no broker: run them here")
    args = parser.parse_args()

    queue = f"orkestrel-bench-{uuid.uuid4().hex[:8]}"
    os.environ.pop("REDIS_URL", None)
    os.environ["ORKESTREL_DEMO_WORD_DELAY"] = "0"
    if args.in_process:
        os.environ.pop("CELERY_BROKER_URL", None)
    else:
        os.environ["CELERY_BROKER_URL"] = args.broker
        os.environ["CELERY_TASK_DEFAULT_QUEUE"] = queue
    scratch, _ = open_scratch_database(args.database_url)
    from django.conf import settings

    if args.in_process:
        # The service's own bound on jobs at once (4 by default), raised to the workers'.
        settings.ORKESTREL["JOB_CONCURRENCY"] = args.concurrency * args.workers
        where = f"in this process (JOB_CONCURRENCY {args.concurrency * args.workers})"
        asyncio.run(measure(args.jobs, args.paced, args.rate, where))
        scratch.cleanup()
        return 0
    assert settings.ORKESTREL["JOBS_ON"] == "workers"
    workers = start_workers(args.workers, args.concurrency, Path(scratch.name))
    try:
        where = f"{args.workers} workers x {args.concurrency} threads, broker {args.broker}"
        asyncio.run(measure(args.jobs, args.paced, args.rate, where))
    finally:
        stop_workers(workers)
        delete_queue(args.broker, queue)
        scratch.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
