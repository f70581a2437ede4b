"""Fixtures for ``/mcp``: alice and bob with API keys, the demo profile, and the official
MCP SDK's client reaching the app in process (over ASGI)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import httpx2
import pytest
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.mcp_server import mcp_door
from agents.models import AgentProfile, ApiKey
from agents.runs import run_manager
from orkestrel.asgi import application
from tests.web.api.conftest import alice, bob, fast_passwords, fresh_throttle  # noqa: F401

from .transport import StreamingASGITransport

pytestmark = pytest.mark.django_db(transaction=True)

URL = "http://testserver/mcp"
# No request of a test waits longer for its answer (the SDK raises then), nor its teardown
# for the door and the runs to end: a test fails, it never hangs.
REQUEST_SECONDS = 60.0
TEARDOWN_SECONDS = 30.0


@pytest.fixture
def demo(settings) -> AgentProfile:
    """The bootstrap's demo profile (slug ``demo``), answering at once."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    return ensure_demo_profile() or AgentProfile.objects.get(slug="demo")


@pytest.fixture
def key_of() -> Callable[..., str]:
    def issue(user, name: str = "mcp") -> str:
        return ApiKey.objects.issue(user=user, name=name)[1]

    return issue


@pytest.fixture
def alice_key(alice, key_of) -> str:  # noqa: F811 - alice is the imported fixture
    return key_of(alice)


@pytest.fixture
def bob_key(bob, key_of) -> str:  # noqa: F811 - bob is the imported fixture
    return key_of(bob)


@pytest.fixture
async def mcp(alice_key: str) -> AsyncIterator[Callable[..., Client]]:
    """``mcp(key=alice_key, mode="auto", elicitation=None)``: the SDK's client for ``/mcp``,
    its HTTP going to the app in process (streamed, so a request the server sends during a
    call reaches the client); ``mode="legacy"`` speaks the revision before 2026-07-28 (the
    ``initialize`` handshake)."""
    clients: list[httpx2.AsyncClient] = []

    def make(
        key: str | None = alice_key,
        mode: str = "auto",
        elicitation: ElicitationFnT | None = None,
        host: str = "testserver",
    ) -> Client:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        http = httpx2.AsyncClient(
            transport=StreamingASGITransport(application),
            base_url=f"http://{host}",
            headers=headers,
        )
        clients.append(http)
        transport = streamable_http_client(f"http://{host}/mcp", http_client=http)
        return Client(
            transport,
            mode=mode,
            elicitation_callback=elicitation,
            read_timeout_seconds=REQUEST_SECONDS,
        )

    yield make
    async with asyncio.timeout(TEARDOWN_SECONDS):
        await mcp_door.stop()
        for http in clients:
            await http.aclose()
        await run_manager.quiet()
