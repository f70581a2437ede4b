"""Project middleware: keep shared caches away from signed-in users' pages."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin

__all__ = ["PrivateCacheControlMiddleware"]


class PrivateCacheControlMiddleware(MiddlewareMixin):
    """Send ``Cache-Control: private, no-store`` to signed-in users unless a view chose.

    A page for a signed-in user (their conversations, files, API answers) must never be kept
    by a proxy or a shared browser cache. Views that set ``Cache-Control`` themselves (the
    admin's ``never_cache``, file downloads) keep theirs.
    """

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated and not response.has_header("Cache-Control"):
            response["Cache-Control"] = "private, no-store"
        return response
