"""CORS for browser front ends on other origins: off by default; with ``CORS_ALLOWED_ORIGINS``,
a preflight to ``/api/`` or ``/v1/`` from a named origin is allowed the API's methods and
headers (never credentials), and any other origin, or any other path, gets no CORS header."""

from __future__ import annotations

import httpx
import pytest

from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

APP = "https://app.example.com"
PATHS = ["/api/conversations/", "/v1/chat/completions"]


@pytest.fixture
async def http():
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


@pytest.fixture
def allowed(settings) -> None:
    settings.CORS_ALLOWED_ORIGINS = [APP]


async def preflight(http: httpx.AsyncClient, path: str, origin: str) -> httpx.Response:
    return await http.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type, last-event-id",
        },
    )


def _listed(value: str) -> set[str]:
    return {item.strip().lower() for item in value.split(",")}


@pytest.mark.parametrize("path", PATHS)
async def test_a_preflight_from_an_allowed_origin_is_answered_with_the_apis_methods_and_headers(
    http, allowed, path
):
    response = await preflight(http, path, APP)
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == APP
    assert _listed(response.headers["Access-Control-Allow-Methods"]) == {
        "delete",
        "get",
        "options",
        "patch",
        "post",
        "put",
    }
    assert _listed(response.headers["Access-Control-Allow-Headers"]) == {
        "authorization",
        "content-type",
        "last-event-id",
        "x-request-id",
    }
    assert "Access-Control-Allow-Credentials" not in response.headers


@pytest.mark.parametrize("path", PATHS)
async def test_another_origin_gets_no_cors_headers(http, allowed, path):
    response = await preflight(http, path, "https://evil.example.net")
    assert "Access-Control-Allow-Origin" not in response.headers


@pytest.mark.parametrize("path", PATHS)
async def test_without_the_setting_no_origin_is_allowed(http, path):
    response = await preflight(http, path, APP)
    assert "Access-Control-Allow-Origin" not in response.headers


async def test_pages_outside_the_apis_get_no_cors_headers(http, allowed):
    response = await preflight(http, "/accounts/login/", APP)
    assert "Access-Control-Allow-Origin" not in response.headers


async def test_an_answer_to_an_allowed_origin_lets_the_page_read_its_id_and_limits(http, allowed):
    response = await http.get("/api/profiles/", headers={"Origin": APP})
    assert response.status_code == 401  # no key: the answer is still readable by the page
    assert response.headers["Access-Control-Allow-Origin"] == APP
    exposed = _listed(response.headers["Access-Control-Expose-Headers"])
    assert {"x-request-id", "ratelimit-remaining", "retry-after"} <= exposed
