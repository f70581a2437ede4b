"""Fixtures for the agents app: a small loopback HTTP server and model factories."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from agents.consumers import ChatConsumer
from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, ProviderEndpoint
from agents.runs import RunManager
from conversations.models import Conversation


@pytest.fixture(autouse=True)
def fast_passwords(settings) -> None:
    """The admin tests log in a new superuser each time; hashing it slowly proves nothing."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@dataclass
class LoopbackServer:
    """Answers every GET with ``status`` and ``body``; records each request's path and headers."""

    status: int = 200
    body: Any = field(default_factory=lambda: {"data": [{"id": "m1"}, {"id": "m2"}]})
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def loopback() -> Iterator[LoopbackServer]:
    state = LoopbackServer()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            state.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
            payload = json.dumps(state.body).encode()
            self.send_response(state.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


# -- live chat: a user, the demo profile, a conversation --
@pytest.fixture
def user(db):
    return get_user_model().objects.create_user("ada", password="pw-ada-123")


@pytest.fixture
def other(db):
    return get_user_model().objects.create_user("bob", password="pw-bob-123")


@pytest.fixture
def demo(db):
    profile = ensure_demo_profile()
    assert profile is not None
    return profile


@pytest.fixture
def fast_demo(demo, settings):
    """The demo model without its per-word delay, so tests run at full speed."""
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.0}
    return demo


@pytest.fixture
def conversation(user, demo):
    return Conversation.objects.create(owner=user, title="first", profile=demo)


def scripted_profile(slug: str, **fields) -> AgentProfile:
    endpoint = ProviderEndpoint.objects.get(name="demo")
    profile = AgentProfile(slug=slug, name=slug, model=f"{endpoint.name}/echo", **fields)
    profile.full_clean()
    profile.save()
    return profile


@pytest.fixture
def manager(monkeypatch) -> RunManager:
    """A fresh run manager per test (the process-wide one is a module global)."""
    fresh = RunManager()
    monkeypatch.setattr(ChatConsumer, "manager", fresh)
    return fresh
