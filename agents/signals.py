"""Every write to agent configuration moves the configuration revision.

Connected for every model of the app and every many-to-many table between them, so a new
model or relation is covered without a line here; a model of the app that is not
configuration (API keys, jobs) says so with ``is_configuration = False``, so its writes leave
every process's cached configuration alone. ``QuerySet.update()`` sends no signal: code that
updates configuration in bulk calls ``bump_config_revision()`` itself.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db.models.signals import m2m_changed, post_delete, post_save

from .models import ConfigRevision, bump_config_revision

__all__ = ["connect_config_signals"]


def _changed(sender: Any, **kwargs: Any) -> None:
    if sender is ConfigRevision:
        return
    if kwargs.get("action", "post_").startswith("post_"):
        bump_config_revision()


def connect_config_signals() -> None:
    for model in apps.get_app_config("agents").get_models():
        if model is ConfigRevision or not getattr(model, "is_configuration", True):
            continue
        post_save.connect(_changed, sender=model, dispatch_uid=f"config-save-{model.__name__}")
        post_delete.connect(_changed, sender=model, dispatch_uid=f"config-delete-{model.__name__}")
        for field in model._meta.local_many_to_many:
            through = field.remote_field.through
            m2m_changed.connect(_changed, sender=through, dispatch_uid=f"config-m2m-{through}")
