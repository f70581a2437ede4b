"""Fixtures for the OpenAI-compatible endpoints: users and keys, the demo profile, a profile
behind a loopback OpenAI-compatible model server, and the official ``openai`` SDK pointed at
the app (in process, over ASGI).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import openai
import pytest
from django.core.cache import cache

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, ApiKey, ProviderEndpoint
from agents.runs import run_manager
from orkestrel.asgi import application
from tests.providers.server import StubServer
from tests.web.api.conftest import alice, bob, fast_passwords  # noqa: F401 - fixtures

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def fresh_throttle() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def demo(settings) -> AgentProfile:
    """The bootstrap's demo profile (slug ``demo``), answering at once."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    return ensure_demo_profile() or AgentProfile.objects.get(slug="demo")


@pytest.fixture
def upstream(stub: StubServer) -> AgentProfile:
    """A profile (slug ``upstream``, no tools) whose model is the stub server."""
    endpoint = ProviderEndpoint.objects.create(
        name="stub", kind="openai", base_url=f"{stub.url}/v1", max_retries=0
    )
    return AgentProfile.objects.create(
        slug="upstream", name="Upstream", model=f"{endpoint.name}/model-x", limit=4
    )


@pytest.fixture
def key_of() -> Callable[..., str]:
    def issue(user, name: str = "sdk") -> str:
        return ApiKey.objects.issue(user=user, name=name)[1]

    return issue


@pytest.fixture
def alice_key(alice, key_of) -> str:  # noqa: F811 - alice is the imported fixture
    return key_of(alice)


@pytest.fixture
async def sdk(alice_key: str) -> AsyncIterator[Callable[..., openai.AsyncOpenAI]]:
    """``sdk(key=alice_key)``: the official async client, its HTTP going to the app in process."""
    clients: list[httpx.AsyncClient] = []

    def make(key: str = alice_key) -> openai.AsyncOpenAI:
        http = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://testserver"
        )
        clients.append(http)
        return openai.AsyncOpenAI(
            api_key=key, base_url="http://testserver/v1", http_client=http, max_retries=0
        )

    yield make
    for http in clients:
        await http.aclose()
    # A run goes on after its response (its frames stored): done before the database is
    # emptied for the next test, or the two deadlock on PostgreSQL.
    await run_manager.quiet()
