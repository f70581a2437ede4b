"""URL routes, and the answers for what no route serves.

Under ``/api/`` and ``/v1/`` a path no route matches is answered in that API's error shape
(problem JSON; OpenAI's), not Django's HTML page: a catch-all after each API's routes, so it
holds with ``DEBUG`` on too. Django's trailing-slash redirect is kept for a ``GET`` of a path
that a route matches with the slash. ``handler404`` and ``handler500`` do the same for a
``404`` or an uncaught error Django answers itself (``DEBUG`` off).
"""

from collections.abc import Callable

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.urls import Resolver404, include, path, re_path, resolve
from django.utils.http import escape_leading_slashes
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from agents.api.errors import problem_response
from agents.api.hooks import schedule_hook
from agents.metrics import metrics
from agents.openai.errors import error_response, server_error, unknown_url
from agents.usage.dashboard import usage_dashboard

from .health import healthz

Answer = Callable[[HttpRequest], HttpResponse]


def _api_not_found(request: HttpRequest) -> HttpResponse:
    return problem_response(
        404,
        f"No operation at {request.method} {request.path}; the API's are listed at /api/docs/.",
        "not_found",
    )


def _openai_not_found(request: HttpRequest) -> HttpResponse:
    return error_response(unknown_url(request.method or "GET", request.path))


def _unmatched(answer: Answer) -> Callable[..., HttpResponse]:
    """The catch-all of an API's prefix: ``answer``'s 404, or the slash redirect."""

    @csrf_exempt  # it changes nothing, and a refusal must be the API's, not the CSRF page
    def view(request: HttpRequest, *args: object, **kwargs: object) -> HttpResponse:
        path_info = request.path_info
        if request.method in ("GET", "HEAD") and settings.APPEND_SLASH and path_info[-1:] != "/":
            try:
                match = resolve(f"{path_info}/")
            except Resolver404:
                match = None
            if match is not None and match.func is not view:
                target = request.get_full_path(force_append_slash=True)
                return HttpResponsePermanentRedirect(escape_leading_slashes(target))
        return answer(request)

    return view


def handler404(request: HttpRequest, exception: Exception) -> HttpResponse:
    """A 404 Django answers itself, in the shape of the API it is under."""
    if request.path.startswith("/api/"):
        return _api_not_found(request)
    if request.path.startswith("/v1/"):
        return _openai_not_found(request)
    return defaults.page_not_found(request, exception)


def handler500(request: HttpRequest) -> HttpResponse:
    """An uncaught error (logged by Django with its traceback), in the API's shape."""
    if request.path.startswith("/api/"):
        return problem_response(500, "The server had an error while answering.", "server_error")
    if request.path.startswith("/v1/"):
        return error_response(server_error())
    return defaults.server_error(request)


urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("metrics", metrics, name="metrics"),
    # Before the admin's own routes: its catch-all would answer this path.
    path("admin/usage/", usage_dashboard, name="usage-dashboard"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("agents.api.urls")),
    path("hooks/schedules/<uuid:schedule_id>/", schedule_hook, name="schedule-hook"),
    re_path(r"^api/", _unmatched(_api_not_found)),
    path("v1/", include("agents.openai.urls")),
    re_path(r"^v1/", _unmatched(_openai_not_found)),
    path("", include("agents.urls")),
    path("", include("conversations.file_urls")),
    path("", include("conversations.urls")),
]
