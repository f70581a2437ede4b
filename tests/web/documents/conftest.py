"""Fixtures for the document tests: users and keys, the ``openai`` SDK against the app, and
profiles on the loopback model server (``stub``) whose model reads documents or does not."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

import pytest

from agents.models import AgentProfile, ProviderEndpoint
from agents.runs import run_manager
from conversations.models import Conversation
from tests.providers.server import StubServer
from tests.web.openai.conftest import (  # noqa: F401 - fixtures
    alice,
    alice_key,
    bob,
    fast_passwords,
    fresh_throttle,
    key_of,
    sdk,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def reader(stub: StubServer) -> Callable[..., AgentProfile]:
    """``reader(kind="openai", native=False)``: the profile ``reader`` on the stub server's
    model ``m``, which reads PDFs itself when ``native``."""

    def make(kind: str = "openai", native: bool = False) -> AgentProfile:
        endpoint = ProviderEndpoint.objects.create(
            name="stub",
            kind=kind,
            base_url=f"{stub.url}/v1" if kind == "openai" else stub.url,
            max_retries=0,
            document_models=["m"] if native else [],
        )
        return AgentProfile.objects.create(
            slug="reader", name="Reader", model=f"{endpoint.name}/m", limit=4
        )

    return make


@pytest.fixture
def chat(alice, reader) -> Callable[..., Conversation]:  # noqa: F811 - alice is a fixture
    """``chat(kind, native)``: a conversation of alice's on the ``reader`` profile."""

    def make(kind: str = "openai", native: bool = False) -> Conversation:
        return Conversation.objects.create(owner=alice, title="docs", profile=reader(kind, native))

    return make


@pytest.fixture(autouse=True)
async def runs_end() -> AsyncIterator[None]:
    yield
    # A run goes on after its answer: done before the database is emptied for the next test.
    await run_manager.quiet()
