"""Pages of the chat UI beside the chat: API keys (the page's script talks to the REST API)
and an agent job's transcript (a delegate tool card links it)."""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

from conversations.rendering import render_markdown

from .models import AgentJob
from .runtime.progress import Progress

__all__ = ["api_keys", "job_detail"]

# How often an open job's page reloads itself (a ``<meta http-equiv="refresh">``: no script).
JOB_REFRESH_SECONDS = 3


@login_required
@require_GET
@ensure_csrf_cookie
def api_keys(request: HttpRequest) -> HttpResponse:
    """The user's API keys: listed, created and revoked by ``keys.js`` through ``/api/keys/``."""
    return render(request, "agents/keys.html")


@login_required
@require_GET
def job_detail(request: HttpRequest, job_id: uuid.UUID) -> HttpResponse:
    """One of the user's agent jobs: what it was asked, how far it got, its answer, its parent
    and the jobs it delegated to (another user's job is a 404); an open job's page reloads
    itself every few seconds until the job settles."""
    job = get_object_or_404(AgentJob.objects.select_related("parent"), pk=job_id, user=request.user)
    result = job.result if isinstance(job.result, dict) else {}
    parent = job.parent if job.parent is not None and job.parent.user_id == job.user_id else None
    context = {
        "job": job,
        "profile": str(job.job.get("provider", "")),
        "system": str(job.job.get("system", "")),
        # Not ``messages``: the base template shows that name as the flash messages.
        "asked": [m for m in job.job.get("messages", []) if isinstance(m, dict)],
        "answer_html": render_markdown(str(result.get("content") or "")),
        "thinking": str(result.get("thinking") or ""),
        "parent": parent,
        "children": job.children.filter(user_id=job.user_id).order_by("created", "id"),
        "progress": Progress.of(job.progress),
        "refresh": None if job.settled else JOB_REFRESH_SECONDS,
    }
    return render(request, "agents/job.html", context)
