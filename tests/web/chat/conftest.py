"""Fixtures for the live-chat tests: a user, the demo profile, a conversation."""

import pytest
from django.contrib.auth import get_user_model

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import AgentProfile, ProviderEndpoint
from conversations.models import Conversation


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


@pytest.fixture(autouse=True)
def fresh_channel_layer():
    """A channel layer per test: each test has its own event loop, and channels-redis keeps
    loop-bound locks inside a layer instance."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()
