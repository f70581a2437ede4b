"""The request budget told on every answer it counted: ``RateLimit-Limit``,
``RateLimit-Remaining`` and ``RateLimit-Reset``, on ``/api/`` and ``/v1/`` alike (one budget
per key), the 429 included."""

from __future__ import annotations

import httpx
import pytest

from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def three_a_minute(settings) -> None:
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"api_key": "3/min"},
    }


@pytest.fixture
async def http(alice_key):
    transport = httpx.ASGITransport(app=application)
    headers = {"Authorization": f"Bearer {alice_key}"}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://testserver", headers=headers
    ) as client:
        yield client


def budget(response: httpx.Response) -> tuple[int, int, int]:
    return (
        int(response.headers["RateLimit-Limit"]),
        int(response.headers["RateLimit-Remaining"]),
        int(response.headers["RateLimit-Reset"]),
    )


async def test_each_answer_tells_the_budget_left_and_the_429_says_none(three_a_minute, http):
    answers = [
        await http.get("/api/profiles/"),
        await http.get("/v1/models"),  # the same key's budget
        await http.get("/api/conversations/?page_size=9"),  # a refusal counts too
        await http.get("/api/profiles/"),
    ]
    assert [a.status_code for a in answers] == [200, 200, 400, 429]
    assert [budget(a)[:2] for a in answers] == [(3, 2), (3, 1), (3, 0), (3, 0)]
    assert all(0 < budget(a)[2] <= 60 for a in answers)
    assert answers[-1].headers["Retry-After"]


async def test_an_answer_the_budget_did_not_count_tells_none(three_a_minute):
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as anonymous:
        response = await anonymous.get("/api/profiles/")
    assert response.status_code == 401
    assert "RateLimit-Limit" not in response.headers
