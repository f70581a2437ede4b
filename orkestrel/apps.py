"""The project package as an app: its system checks (``orkestrel.checks``)."""

from __future__ import annotations

from django.apps import AppConfig


class OrkestrelConfig(AppConfig):
    """Registers the project's checks; the project package has no models."""

    name = "orkestrel"
    verbose_name = "orkestrel"

    def ready(self) -> None:
        # Registering checks on import is Django's way, as for signal handlers.
        from . import checks  # noqa: F401
