"""Schedules: agent jobs started by a cron (in a time zone), a signed webhook, or Run now.

Modules: ``firing`` (the database side: claiming due schedules, the history rows),
``service`` (starting one: its history row, then its job), ``ticker`` (the scheduler's pass,
and the loop running it; the daily purge rides along), ``signature`` (the webhook's HMAC),
``asgi`` (the scheduler in the server process), ``tasks`` (on Celery workers). The cron maths
are ``orkestrel.cron``'s; the rows are ``agents.models.schedules``'.
"""

from .firing import Firing, Replayed, claim_due
from .service import ProfileUnavailable, Started, start_schedule
from .signature import HEADER, TOLERANCE, SignatureError, sign, verify
from .ticker import Scheduler, Tick, tick

__all__ = [
    "HEADER",
    "TOLERANCE",
    "Firing",
    "ProfileUnavailable",
    "Replayed",
    "Scheduler",
    "SignatureError",
    "Started",
    "Tick",
    "claim_due",
    "sign",
    "start_schedule",
    "tick",
    "verify",
]
