"""Retention: how long each kind of record is kept, and the purge of what is past it.

Modules: ``policy`` (the setting and the profiles' overrides, as cutoffs), ``purge`` (deleting
or counting, kind by kind; never the usage ledger), ``daily`` (the scheduler's daily run).
``manage.py purge [--dry-run]`` runs it by hand.
"""

from .daily import purge_if_due, record
from .policy import Retention, configured_days
from .purge import PurgeResult, purge

__all__ = ["PurgeResult", "Retention", "configured_days", "purge", "purge_if_due", "record"]
