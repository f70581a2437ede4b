"""Project middleware: static files without a thread hop; no shared caches for users' pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase
from django.utils.deprecation import MiddlewareMixin
from whitenoise.middleware import WhiteNoiseMiddleware

__all__ = ["PrivateCacheControlMiddleware", "StaticFilesMiddleware"]


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    """WhiteNoise, async: only a static file's answer is built in a thread.

    WhiteNoise's own middleware is sync only, so under ASGI Django ran every request (a
    streamed run included) through a thread and back to reach the async views behind it.
    """

    sync_capable = False
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]]) -> None:
        super().__init__(get_response)
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:
            static_file = await sync_to_async(self.find_file)(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            return await sync_to_async(self.serve)(static_file, request)
        return await self.get_response(request)


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
