"""ASGI entry for the relay benchmark: the real app, with a timestamping model behind ``scripted``.

``daphne bench.relay_app:application`` serves exactly ``orkestrel.asgi.application``; the only
difference is the model the ``scripted`` endpoint kind builds. A user message of the form
``relay <count> <interval>`` is answered by ``StampedProvider`` (``bench/floor_model.py``, which
``bench/relay_floor.py`` serves too): ``count`` content deltas, delta ``i`` due at
``start + i * interval`` (an absolute schedule, so loop lag never slows the rate), each
carrying the server's ``time.monotonic()`` at the moment it is yielded. Any other message (and
a summarizer call) goes to the ordinary demo model.

The swap replaces ``agents.runtime.providers.create_demo_provider``, the one name
``provider_for`` calls for ``scripted`` endpoints; the app has no registry of provider
factories yet (see ``bench/README.md``). Never import this module from the app.

Environment, set by ``bench/relay.py``: ``RELAY_SAMPLE`` (a file: sample every thread's stack
and write a summary there at exit), ``RELAY_START_TRACE`` (a file: each run start's steps,
``bench/start_trace.py``) and ``RELAY_CHECKPOINT_SECONDS`` (a what-if for diagnosis).
"""

from __future__ import annotations

import os
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
django.setup()
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

from agents.runtime import providers as _providers  # noqa: E402
from bench.floor_model import COMMAND, StampedProvider  # noqa: E402
from orkestrel.core import Provider  # noqa: E402

__all__ = ["COMMAND", "StampedProvider", "application"]

_create_demo_provider = _providers.create_demo_provider


def create_relay_provider(delay: float = 0.03, name: str = "demo") -> Provider:
    """What ``provider_for`` builds for a ``scripted`` endpoint while benchmarking."""
    return StampedProvider(_create_demo_provider(delay=delay, name=name), name)


def sample_stacks(path: str, every: float = 0.002) -> None:
    """Sample every thread's stack from a daemon thread; write a summary at exit.

    A poor man's sampling profiler (cProfile on 3.12+ traces every thread and slows the
    server several times over). Taking a sample needs the GIL, so a thread waiting to get the
    GIL back after a system call shows at that call: the shares of ``selectors.py:modify``,
    socket writes and ``select`` include GIL waits, not only kernel time.
    """
    import atexit
    import collections
    import sys
    import threading

    main = threading.main_thread().ident
    counts: dict[str, collections.Counter[str]] = {
        "loop": collections.Counter(),
        "worker": collections.Counter(),
    }
    totals: collections.Counter[str] = collections.Counter()

    def frames(frame: object) -> list[str]:
        names = []
        while frame is not None:
            code = frame.f_code  # type: ignore[attr-defined]
            where = code.co_filename.split("site-packages/")[-1].removeprefix(str(ROOT) + "/")
            names.append(f"{where}:{code.co_name}")
            frame = frame.f_back  # type: ignore[attr-defined]
        return names

    def run() -> None:
        me = threading.get_ident()
        while True:
            time.sleep(every)
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                kind = "loop" if ident == main else "worker"
                names = frames(frame)
                if kind == "worker" and names[0].endswith("futures/thread.py:_worker"):
                    continue  # an idle executor thread waiting for work
                totals[kind] += 1
                counts[kind].update(set(names))
                counts[kind][f"LEAF {names[0]}"] += 1

    def report() -> None:
        with open(path, "w") as out:
            for kind, counter in counts.items():
                total = totals[kind] or 1
                out.write(f"== {kind} thread: {totals[kind]} busy samples (inclusive share)\n")
                for name, count in counter.most_common(70):
                    out.write(f"{count / total:6.1%}  {name}\n")

    atexit.register(report)
    threading.Thread(target=run, name="relay-sampler", daemon=True).start()


_providers.create_demo_provider = create_relay_provider
if os.environ.get("RELAY_CHECKPOINT_SECONDS"):
    # A what-if for diagnosis only (``bench/relay.py --checkpoint``), never the default: the
    # sockets and the API get a run manager with that checkpoint period.
    from agents.consumers import ChatConsumer
    from agents.runs import RunManager, RunTimings, run_service

    _what_if = RunManager(
        timings=RunTimings(checkpoint=float(os.environ["RELAY_CHECKPOINT_SECONDS"]))
    )
    ChatConsumer.manager = _what_if
    run_service.manager = _what_if
if os.environ.get("RELAY_DB_PROCESS"):
    # A what-if for diagnosis only (``bench/relay.py --db-process``): a run start's database
    # hop (``prepare_run``) runs in a child process, off this process's GIL.
    import asyncio
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    from agents.runs import manager as _manager
    from agents.runs.records import prepare_run as _prepare_run

    _pool = ProcessPoolExecutor(
        max_workers=int(os.environ["RELAY_DB_PROCESS"]),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=django.setup,
    )
    _in_thread = _manager.in_thread

    def _in_child(function, _thread=_in_thread):  # type: ignore[no-untyped-def]
        if function is not _prepare_run:
            return _thread(function)

        async def call(*args, **kwargs):  # type: ignore[no-untyped-def]
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(_pool, partial(function, *args, **kwargs))

        return call

    _manager.in_thread = _in_child
    for _ in range(int(os.environ["RELAY_DB_PROCESS"])):
        _pool.submit(int).result()  # started and set up before the first run
if os.environ.get("RELAY_SAMPLE"):
    sample_stacks(os.environ["RELAY_SAMPLE"])
from orkestrel.asgi import application  # noqa: E402

if os.environ.get("RELAY_START_TRACE"):
    # A what-if for diagnosis only (``--start-trace``): each start's steps timed.
    from bench.start_trace import http, install

    install(os.environ["RELAY_START_TRACE"])
    application = http(application)
