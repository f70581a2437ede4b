"""The middleware stack under ASGI: Django's hooks run on the event loop, and what needs the
database (a session to save, messages to store) still gets it."""

from __future__ import annotations

import re
import threading

import httpx
import pytest
from django.conf import settings
from django.contrib.auth import get_user_model
from django.http import HttpRequest, HttpResponse
from django.test import AsyncRequestFactory
from django.test.client import MULTIPART_CONTENT
from django.utils.deprecation import MiddlewareMixin
from django.utils.module_loading import import_string

from orkestrel.asgi import application
from orkestrel.middleware import CommonMiddleware, CsrfViewMiddleware, OnTheLoop

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "http://testserver"


def test_every_hook_middleware_of_the_stack_runs_on_the_loop():
    # Django's own ``MiddlewareMixin`` would take two thread hops per middleware per request.
    hooked = [import_string(path) for path in settings.MIDDLEWARE]
    mixins = [cls for cls in hooked if issubclass(cls, MiddlewareMixin)]
    assert len(mixins) >= 9 and all(issubclass(cls, OnTheLoop) for cls in mixins)


async def test_hooks_run_on_the_thread_of_the_event_loop():
    seen: list[int] = []

    async def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse("ok")

    class Recording(CommonMiddleware):
        def process_response(self, request, response):  # type: ignore[no-untyped-def]
            seen.append(threading.get_ident())
            return super().process_response(request, response)

    response = await Recording(view)(AsyncRequestFactory().get("/"))
    assert response.status_code == 200
    assert seen == [threading.get_ident()]


async def _view_hook_thread(request: HttpRequest) -> int:
    async def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse("ok")

    seen: list[int] = []

    class Recording(CsrfViewMiddleware):
        def process_view(self, request, callback, args, kwargs):  # type: ignore[no-untyped-def]
            seen.append(threading.get_ident())
            return super().process_view(request, callback, args, kwargs)

    hook = Recording(view).process_view
    response = await hook(request, view, (), {})
    assert response is not None and response.status_code == 403  # no token: refused
    return seen[0]


async def test_the_csrf_check_runs_on_the_loop_and_a_multipart_body_is_parsed_in_a_thread():
    # Django adapts a sync ``process_view`` with a hop; ours is a coroutine it awaits.
    factory = AsyncRequestFactory()
    form = factory.post("/", "name=value", content_type="application/x-www-form-urlencoded")
    assert await _view_hook_thread(form) == threading.get_ident()
    upload = factory.post("/", {"name": "value"}, content_type=MULTIPART_CONTENT)
    assert await _view_hook_thread(upload) != threading.get_ident()


async def _csrf(client: httpx.AsyncClient) -> str:
    page = await client.get("/accounts/login/")
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text)
    assert found is not None
    return found.group(1)


async def test_signing_in_saves_the_session_and_a_post_without_its_token_is_refused():
    await get_user_model().objects.acreate_user("alice", password="a long enough passphrase")
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url=BASE, follow_redirects=False
    ) as client:
        token = await _csrf(client)
        refused = await client.post(
            "/accounts/login/", data={"username": "alice", "password": "a long enough passphrase"}
        )
        assert refused.status_code == 403
        signed_in = await client.post(
            "/accounts/login/",
            data={
                "username": "alice",
                "password": "a long enough passphrase",
                "csrfmiddlewaretoken": token,
            },
        )
        assert signed_in.status_code == 302, signed_in.text[:500]
        assert settings.SESSION_COOKIE_NAME in client.cookies
        chats = await client.get("/")
        assert chats.status_code == 200
        assert chats.headers["Cache-Control"] == "private, no-store"
