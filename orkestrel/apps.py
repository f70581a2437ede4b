"""The project package as an app: its system checks (``orkestrel.checks``), and its telemetry
switched on from the environment in every process that sets Django up (web and workers)."""

from __future__ import annotations

import os

from django.apps import AppConfig

from .telemetry.tracing import configure


class OrkestrelConfig(AppConfig):
    """Registers the project's checks; the project package has no models."""

    name = "orkestrel"
    verbose_name = "orkestrel"

    def ready(self) -> None:
        # Registering checks on import is Django's way, as for signal handlers.
        from . import checks  # noqa: F401

        configure(os.environ)
