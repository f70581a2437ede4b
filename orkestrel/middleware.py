"""Project middleware: Django's own hooks run on the event loop, static files without a thread
hop, and no shared caches for users' answers.

Under ASGI, Django's ``MiddlewareMixin`` runs each hook of each middleware in a thread and
back: two hops per middleware per request, about twenty for the stack in settings, each
waiting for the GIL behind whatever the database thread is doing. Their hooks never wait on
I/O except where a response stores messages, so the ``OnTheLoop`` versions below run them
inline and take the thread only then. The security, session, CSRF and clickjacking
middleware stay Django's own classes: ``check --deploy`` looks for them by their dotted paths
and would skip its HTTPS and cookie checks for a subclass.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.http import HttpRequest, HttpResponseBase
from django.middleware import common, csp
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject
from whitenoise.middleware import WhiteNoiseMiddleware

__all__ = [
    "AuthenticationMiddleware",
    "CommonMiddleware",
    "ContentSecurityPolicyMiddleware",
    "MessageMiddleware",
    "OnTheLoop",
    "PrivateCacheControlMiddleware",
    "StaticFilesMiddleware",
]


class OnTheLoop(MiddlewareMixin):
    """A ``MiddlewareMixin`` whose hooks run inline under ASGI (they never wait on I/O); a
    response for which ``response_blocks`` says otherwise is processed in the request's thread
    as Django would. Under WSGI nothing changes."""

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        """Whether ``process_response`` may touch the database for this response."""
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        hooks: Any = self
        response = None
        if hasattr(hooks, "process_request"):
            response = hooks.process_request(request)
        response = response or await cast(Awaitable[HttpResponseBase], self.get_response(request))
        if hasattr(hooks, "process_response"):
            if self.response_blocks(request, response):
                response = await sync_to_async(hooks.process_response, thread_sensitive=True)(
                    request, response
                )
            else:
                response = hooks.process_response(request, response)
        return response


class ContentSecurityPolicyMiddleware(OnTheLoop, csp.ContentSecurityPolicyMiddleware):
    """Django's, on the loop (a lazy nonce and a header)."""


class CommonMiddleware(OnTheLoop, common.CommonMiddleware):
    """Django's, on the loop (the host check and the trailing-slash redirect)."""


class AuthenticationMiddleware(OnTheLoop, auth.AuthenticationMiddleware):
    """Django's, on the loop: ``request.user`` stays lazy until a view reads it."""


class MessageMiddleware(OnTheLoop, messages.MessageMiddleware):
    """Django's, on the loop: only stored or added messages take the thread."""

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


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


def _signed_in(request: HttpRequest) -> bool:
    """Whether ``request`` comes from someone signed in, reading no database: a resolved
    user says so itself; a lazy one (never read by the view) only with credentials sent."""
    user = getattr(request, "user", None)
    if user is None:
        return False
    if isinstance(user, SimpleLazyObject):
        return "Authorization" in request.headers or settings.SESSION_COOKIE_NAME in request.COOKIES
    return bool(user.is_authenticated)


class PrivateCacheControlMiddleware(OnTheLoop):
    """Send ``Cache-Control: private, no-store`` to signed-in users unless a view chose.

    A page for a signed-in user (their conversations, files, API answers) must never be kept
    by a proxy or a shared browser cache. Views that set ``Cache-Control`` themselves (the
    admin's ``never_cache``, file downloads) keep theirs.
    """

    def process_response(
        self, request: HttpRequest, response: HttpResponseBase
    ) -> HttpResponseBase:
        if _signed_in(request) and not response.has_header("Cache-Control"):
            response["Cache-Control"] = "private, no-store"
        return response
