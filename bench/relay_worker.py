"""Celery entry for the relay benchmark's workers (``bench/relay.py --runs-on workers``).

``celery -A bench.relay_worker worker`` runs exactly ``orkestrel.celery``'s app and tasks; the
only difference is the model the ``scripted`` endpoint kind builds: the same stamping model as
``bench/relay_app.py``'s (``bench/floor_model.py``), so a delta's stamp is taken on the worker
that runs the run and *arrival - stamp* is what the trip worker -> Redis -> web -> socket adds.
Never import this module from the app.
"""

from __future__ import annotations

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
django.setup()

from agents.runs import tasks as _tasks  # noqa: E402
from agents.runtime import providers as _providers  # noqa: E402
from bench.floor_model import StampedProvider  # noqa: E402
from orkestrel.celery import app  # noqa: E402
from orkestrel.core import Provider  # noqa: E402

__all__ = ["app"]

_create_demo_provider = _providers.create_demo_provider


def create_relay_provider(delay: float = 0.03, name: str = "demo") -> Provider:
    """What ``provider_for`` builds for a ``scripted`` endpoint while benchmarking."""
    return StampedProvider(_create_demo_provider(delay=delay, name=name), name)


_providers.create_demo_provider = create_relay_provider

if os.environ.get("RELAY_BATCH_SECONDS"):
    # A what-if for diagnosis only (``bench/relay.py --relay-batch``), never the default: the
    # gather of the worker's relay, read when its run manager is made.
    _tasks.RELAY_BATCH = float(os.environ["RELAY_BATCH_SECONDS"])
