"""Pages of the chat UI beside the chat: API keys (the page's script talks to the REST API),
the user's own MCP credentials (plain forms, no script), and an agent job's transcript (a
delegate tool card links it)."""

from __future__ import annotations

import uuid
from urllib.parse import urlencode

from asgiref.sync import async_to_sync
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST

from conversations.rendering import render_markdown

from .mcp.credentials import (
    credential_slots,
    enter_credential,
    oauth_endpoint,
    remove_credential,
    store_grant,
)
from .mcp.errors import McpError
from .mcp.oauth_connect import Pending, begin, finish
from .models import AgentJob
from .runtime.progress import Progress

__all__ = [
    "api_keys",
    "job_detail",
    "mcp_connect",
    "mcp_credential",
    "mcp_credential_remove",
    "mcp_credentials",
    "mcp_oauth_callback",
]

# How often an open job's page reloads itself (a ``<meta http-equiv="refresh">``: no script).
JOB_REFRESH_SECONDS = 3


@login_required
@require_GET
@ensure_csrf_cookie
def api_keys(request: HttpRequest) -> HttpResponse:
    """The user's API keys: listed, created and revoked by ``keys.js`` through ``/api/keys/``."""
    return render(request, "agents/keys.html")


def _user_id(request: HttpRequest) -> int:
    """The signed-in user's id (``login_required`` let no one else this far)."""
    return int(request.user.pk or 0)


# What the page says after a change (``?done=saved&server=x``: the redirect's own notice, on
# the page itself, not in the site's flash list).
NOTICES = {
    "saved": "Your credential for {} is saved.",
    "removed": "Your credential for {} is removed.",
    "connected": "Your account on {} is connected.",
}
# Where OAuth connections under way wait in the session (state → ``Pending``), at most a few.
PENDING_KEY = "mcp_oauth_pending"
MAX_PENDING = 5


def _credentials_page(
    request: HttpRequest, errors: dict[str, str] | None = None, status: int = 200
) -> HttpResponse:
    slots = credential_slots(_user_id(request))
    server, done = request.GET.get("server", ""), request.GET.get("done", "")
    known = done in NOTICES and any(slot.name == server for slot in slots)
    notice = NOTICES[done].format(server) if known and not errors else ""
    context = {"slots": slots, "errors": errors or {}, "notice": notice}
    return render(request, "agents/mcp_credentials.html", context, status=status)


def _back(done: str, server: str) -> HttpResponse:
    return redirect(
        f"{reverse('agents:mcp-credentials')}?{urlencode({'done': done, 'server': server})}"
    )


@never_cache
@login_required
@require_GET
def mcp_credentials(request: HttpRequest) -> HttpResponse:
    """The MCP servers that take each user's own token: whether the user entered theirs (the
    token is never shown back), a form to enter or replace it, and one to remove it."""
    return _credentials_page(request)


@never_cache
@login_required
@require_POST
def mcp_credential(request: HttpRequest, server: str) -> HttpResponse:
    """Enter or replace the user's token for ``server``; back to the page (400 with the
    reason for a token that is not one; 404 for a server they may not enter one for)."""
    try:
        enter_credential(_user_id(request), server, request.POST.get("token", ""))
    except LookupError:
        raise Http404("No such MCP server.") from None
    except ValidationError as error:
        return _credentials_page(request, {server: " ".join(error.messages)}, status=400)
    return _back("saved", server)


@never_cache
@login_required
@require_POST
def mcp_credential_remove(request: HttpRequest, server: str) -> HttpResponse:
    """Forget the user's token for ``server``; back to the page."""
    if remove_credential(_user_id(request), server):
        return _back("removed", server)
    return redirect("agents:mcp-credentials")


@never_cache
@login_required
@require_POST
def mcp_connect(request: HttpRequest, server: str) -> HttpResponse:
    """Start connecting the user's account to an OAuth ``server``: discover its authorization
    server, register, and send the browser there (PKCE; the verifier stays in the session)."""
    try:
        endpoint = oauth_endpoint(_user_id(request), server)
    except LookupError:
        raise Http404("No such MCP server.") from None
    callback = request.build_absolute_uri(reverse("agents:mcp-oauth-callback"))
    try:
        url, pending = async_to_sync(begin)(endpoint, callback)
    except McpError as error:
        return _credentials_page(request, {server: str(error)}, status=502)
    waiting = dict(request.session.get(PENDING_KEY) or {})
    waiting[pending.state] = pending.as_dict()
    request.session[PENDING_KEY] = dict(list(waiting.items())[-MAX_PENDING:])
    # A page that navigates there (CSP's form-action would block a redirect off this origin).
    return render(request, "agents/mcp_connect.html", {"server": server, "url": url})


@never_cache
@login_required
@require_GET
def mcp_oauth_callback(request: HttpRequest) -> HttpResponse:
    """Where the authorization server sends the browser back: the ``state`` must be one this
    user's session started (each is used once); the code is exchanged and the tokens sealed."""
    waiting = dict(request.session.get(PENDING_KEY) or {})
    pending = Pending.from_dict(waiting.pop(request.GET.get("state", ""), None))
    request.session[PENDING_KEY] = waiting
    if pending is None:
        return _credentials_page(request, {"": "That sign-in is unknown or was used."}, 400)
    code = request.GET.get("code", "")
    if not code:
        denied = request.GET.get("error", "no code came back")
        return _credentials_page(request, {pending.server: f"Not connected: {denied}."}, 400)
    try:
        endpoint = oauth_endpoint(_user_id(request), pending.server)
        grant = async_to_sync(finish)(endpoint, pending, code)
    except LookupError:
        raise Http404("No such MCP server.") from None
    except McpError as error:
        return _credentials_page(request, {pending.server: str(error)}, status=502)
    store_grant(_user_id(request), endpoint.pk, grant)
    return _back("connected", pending.server)


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
