"""Project middleware: Django's own hooks run on the event loop, static files without a thread
hop, and no shared caches for users' answers.

Under ASGI, Django's ``MiddlewareMixin`` runs each hook of each middleware in a thread and
back: two hops per middleware per request, about twenty for the stack in settings, each
waiting for the GIL behind whatever the database thread is doing (a hop took 0.2-0.3 ms of
CPU on the 2-core machine, a request's first one 1.4 ms with its thread). Their hooks never
wait on I/O except where a session is saved, messages are stored, a CSRF secret lives in the
session or a multipart body is parsed, so the ``OnTheLoop`` versions below run them inline and
take the thread only then. ``check --deploy`` looks for Django's security, CSRF and
clickjacking middleware by their dotted paths: ``orkestrel.checks`` runs those checks for ours.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth import middleware as auth
from django.contrib.messages import middleware as messages
from django.contrib.sessions import middleware as sessions
from django.http import HttpRequest, HttpResponseBase
from django.middleware import clickjacking, common, csp, csrf, security
from django.utils.deprecation import MiddlewareMixin
from django.utils.functional import SimpleLazyObject
from whitenoise.middleware import WhiteNoiseMiddleware

from .request_scope import HEADER, RequestScope, open_scope, request_id_from

__all__ = [
    "AuthenticationMiddleware",
    "CommonMiddleware",
    "ContentSecurityPolicyMiddleware",
    "CsrfViewMiddleware",
    "MessageMiddleware",
    "OnTheLoop",
    "PrivateCacheControlMiddleware",
    "RequestScopeMiddleware",
    "SecurityMiddleware",
    "SessionMiddleware",
    "StaticFilesMiddleware",
    "XFrameOptionsMiddleware",
]


class OnTheLoop(MiddlewareMixin):
    """A ``MiddlewareMixin`` whose hooks (``process_view`` too) run inline under ASGI; a
    request or response for which ``request_blocks`` or ``response_blocks`` says they may
    wait on I/O is processed in the request's thread as Django would. Under WSGI nothing
    changes."""

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)
        view_hook = getattr(self, "process_view", None)
        if self.async_mode and view_hook is not None:
            # Django adapts a sync ``process_view`` with a thread hop; a coroutine it awaits.
            async def process_view(
                request: HttpRequest, view: Callable[..., Any], args: Any, kwargs: Any
            ) -> HttpResponseBase | None:
                if self.request_blocks(request):
                    return await sync_to_async(view_hook, thread_sensitive=True)(
                        request, view, args, kwargs
                    )
                return cast("HttpResponseBase | None", view_hook(request, view, args, kwargs))

            # An instance attribute: the class's method stays Django's, for WSGI.
            self.__dict__["process_view"] = process_view

    def request_blocks(self, request: HttpRequest) -> bool:
        """Whether ``process_request`` or ``process_view`` may wait on I/O for this request."""
        return False

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        """Whether ``process_response`` may wait on I/O for this response."""
        return False

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        hooks: Any = self
        response = None
        if hasattr(hooks, "process_request"):
            if self.request_blocks(request):
                response = await sync_to_async(hooks.process_request, thread_sensitive=True)(
                    request
                )
            else:
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


class SecurityMiddleware(OnTheLoop, security.SecurityMiddleware):
    """Django's, on the loop (the HTTPS redirect and headers)."""


class SessionMiddleware(OnTheLoop, sessions.SessionMiddleware):
    """Django's, on the loop: a lazy session; only one to save takes the thread."""

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        session = getattr(request, "session", None)
        return session is not None and bool(session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class CsrfViewMiddleware(OnTheLoop, csrf.CsrfViewMiddleware):
    """Django's, on the loop (a cookie against a header or a form field); a secret kept in the
    session, or a multipart body to parse (uploads written to disk), takes the thread."""

    def request_blocks(self, request: HttpRequest) -> bool:
        return bool(settings.CSRF_USE_SESSIONS) or request.content_type == "multipart/form-data"

    def response_blocks(self, request: HttpRequest, response: HttpResponseBase) -> bool:
        return bool(settings.CSRF_USE_SESSIONS)


class XFrameOptionsMiddleware(OnTheLoop, clickjacking.XFrameOptionsMiddleware):
    """Django's, on the loop (a header)."""


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


class RequestScopeMiddleware:
    """Opens each request's scope (``orkestrel.request_scope``): its id, kept from a
    well-formed ``X-Request-ID`` or made, is named by every log line written while it is
    handled and sent back on the response, with the headers the view added (``RateLimit-*``).

    First in the stack, so every answer carries the id, a redirect or a refusal too.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self.async_mode = iscoroutinefunction(get_response)
        if self.async_mode:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.async_mode:
            return self.__acall__(request)
        scope = open_scope(request_id_from(request.headers.get(HEADER)))
        return self._finish(cast(HttpResponseBase, self.get_response(request)), scope)

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        scope = open_scope(request_id_from(request.headers.get(HEADER)))
        response = await cast(Awaitable[HttpResponseBase], self.get_response(request))
        return self._finish(response, scope)

    @staticmethod
    def _finish(response: HttpResponseBase, scope: RequestScope) -> HttpResponseBase:
        response[HEADER] = scope.id
        for name, value in scope.headers.items():
            if not response.has_header(name):
                response[name] = value
        return response
