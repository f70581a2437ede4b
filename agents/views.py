"""Settings pages of the chat UI (thin: the page's script talks to the REST API)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET

__all__ = ["api_keys"]


@login_required
@require_GET
@ensure_csrf_cookie
def api_keys(request: HttpRequest) -> HttpResponse:
    """The user's API keys: listed, created and revoked by ``keys.js`` through ``/api/keys/``."""
    return render(request, "agents/keys.html")
