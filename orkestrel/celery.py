"""The Celery app, by Celery's Django convention: configured from the ``CELERY_*`` settings.

Start a worker with ``celery -A orkestrel worker`` (Celery finds this module's ``app``). The
package's ``__init__`` does not import this module, as Celery's template has it: importing
``orkestrel.core`` (the kit) must not load Celery or Django. Nothing needs it to: the project's
one task is declared on this app (not with ``shared_task``), and web processes send jobs by the
task's name (``agents.jobs.service``). Task modules are found in the installed apps, and in
``agents.jobs``, when the worker starts.
"""

from __future__ import annotations

import os

from celery import Celery

__all__ = ["app"]

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")

app = Celery("orkestrel")
# Read lazily, at the app's first use: every ``CELERY_<NAME>`` Django setting is ``<name>``.
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
app.autodiscover_tasks(["agents.jobs"])
