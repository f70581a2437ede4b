"""``POST /hooks/schedules/<id>/``: a schedule's webhook, which starts it on demand.

Authenticated by the body's signature alone (``agents.schedules.signature``: HMAC-SHA256 with
the schedule's secret, timed, each signature once), not by a session or key: a sender such as
a CI server or a form service holds the secret, not a user's credentials. Answers ``202``
with the job and its URL. A missing, malformed, expired or wrong signature is a ``401``, a
replayed one, a disabled schedule or an unusable profile a ``409``: each changes nothing. The
body, when not empty, follows the schedule's prompt in the job's message.
"""

from __future__ import annotations

import time
import uuid

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from rest_framework.renderers import JSONRenderer

from orkestrel.db import in_thread

from ..models import Schedule, ScheduleRun
from ..schedules import (
    HEADER,
    Firing,
    ProfileUnavailable,
    Replayed,
    SignatureError,
    start_schedule,
    verify,
)
from .errors import problem_response
from .jobs import JobSerializer

__all__ = ["schedule_hook"]


def _schedule(schedule_id: uuid.UUID) -> Schedule | None:
    return Schedule.objects.filter(pk=schedule_id).first()


@csrf_exempt  # signed, not cookied: a CSRF token means nothing to a webhook's sender
async def schedule_hook(request: HttpRequest, schedule_id: uuid.UUID) -> HttpResponse:
    """Start the schedule if the body is signed with its secret (see the module)."""
    if request.method != "POST":
        response = problem_response(405, "A webhook takes POST only.", "method_not_allowed")
        response["Allow"] = "POST"
        return response
    schedule = await in_thread(_schedule)(schedule_id)
    if schedule is None:
        return problem_response(404, "No such schedule.", "not_found")
    body = request.body
    limit = settings.ORKESTREL["MAX_MESSAGE_CHARS"]
    if len(body) > limit:
        return problem_response(413, f"A webhook's body is at most {limit} bytes.", "too_large")
    try:
        signed = verify(
            request.headers.get(HEADER), body, schedule.webhook_secret(), now=time.time()
        )
    except SignatureError as error:
        return problem_response(error.status, str(error), error.code)
    if not schedule.enabled:
        return problem_response(409, "The schedule is disabled.", "schedule_disabled")
    firing = Firing.of(schedule, ScheduleRun.Trigger.WEBHOOK)
    try:
        started = await start_schedule(
            firing, signature=signed.digest, payload=body.decode("utf-8", errors="replace")
        )
    except (Replayed, ProfileUnavailable) as error:
        return problem_response(409, str(error), error.code)
    location = reverse("api-job-detail", args=[started.job.pk])
    data = {**JobSerializer(started.job).data, "url": request.build_absolute_uri(location)}
    response = HttpResponse(
        JSONRenderer().render(data), status=202, content_type="application/json"
    )
    response["Location"] = location
    return response
