"""Who may use a profile: operators name users and groups; every front door lists and accepts
only those; names that read as an authority are refused."""

from __future__ import annotations

import httpx
import openai
import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group
from django.core.exceptions import ValidationError

from agents.models import AgentProfile, ProviderEndpoint
from agents.runtime.spec import load_spec
from conversations.models import Conversation
from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def profiles(alice):
    """``open`` (everyone) and ``team`` (the ``team`` group: alice is in it, bob is not)."""
    endpoint = ProviderEndpoint.objects.create(name="demo", kind="scripted")
    AgentProfile.objects.create(slug="open", name="Open", model=f"{endpoint.name}/echo")
    team = AgentProfile.objects.create(slug="team", name="Team", model=f"{endpoint.name}/echo")
    group = Group.objects.create(name="team")
    group.user_set.add(alice)
    team.groups.add(group)
    return team


def test_a_profile_limited_to_a_group_is_listed_only_to_its_members(
    api, bob, key_client, issue_key, profiles
):
    assert [p["slug"] for p in api.get("/api/profiles/").json()["results"]] == ["open", "team"]
    outsider = key_client(issue_key(bob))
    assert [p["slug"] for p in outsider.get("/api/profiles/").json()["results"]] == ["open"]
    refused = outsider.post("/api/conversations/", {"profile": "team"}, format="json")
    assert refused.status_code == 400 and "profile" in refused.json()["errors"]
    assert api.post("/api/conversations/", {"profile": "team"}, format="json").status_code == 201


def test_a_profile_naming_a_user_opens_it_to_that_user_only(bob, key_client, issue_key, profiles):
    profiles.users.add(bob)
    outsider = key_client(issue_key(bob))
    assert [p["slug"] for p in outsider.get("/api/profiles/").json()["results"]] == [
        "open",
        "team",
    ]


def test_a_conversation_whose_profile_was_closed_to_its_owner_falls_back(bob, profiles):
    conversation = Conversation.objects.create(owner=bob, profile=profiles)
    assert load_spec(str(conversation.pk), bob.pk).profile.slug == "open"


def test_joining_or_leaving_a_group_takes_effect_at_the_next_start(bob, profiles):
    # The profile's access lists are cached with its configuration; membership never is.
    conversation = Conversation.objects.create(owner=bob, profile=profiles)
    assert load_spec(str(conversation.pk), bob.pk).profile.slug == "open"
    group = Group.objects.get(name="team")
    group.user_set.add(bob)
    assert load_spec(str(conversation.pk), bob.pk).profile.slug == "team"
    group.user_set.remove(bob)
    assert load_spec(str(conversation.pk), bob.pk).profile.slug == "open"


async def test_the_openai_endpoints_list_and_accept_only_the_users_profiles(
    bob, issue_key, profiles
):
    key = await sync_to_async(issue_key)(bob)
    http = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=application), base_url="http://testserver"
    )
    client = openai.AsyncOpenAI(
        api_key=key, base_url="http://testserver/v1", http_client=http, max_retries=0
    )
    try:
        assert [model.id for model in (await client.models.list()).data] == ["open"]
        with pytest.raises(openai.NotFoundError):
            await client.models.retrieve("team")
        with pytest.raises(openai.PermissionDeniedError) as caught:
            await client.chat.completions.create(
                model="team", messages=[{"role": "user", "content": "hi"}]
            )
        assert caught.value.body["code"] == "model_not_allowed"
        assert not await sync_to_async(Conversation.objects.exists)()
    finally:
        await http.aclose()


@pytest.mark.parametrize(
    "name", ["System", "admin", "Site Administrator", "4dm1n", "super-user", "Everyone", "root"]
)
def test_names_that_read_as_an_authority_are_refused(db, name):
    endpoint = ProviderEndpoint.objects.create(name="demo", kind="scripted")
    profile = AgentProfile(slug="fine", name=name, model=f"{endpoint.name}/echo")
    with pytest.raises(ValidationError) as caught:
        profile.full_clean()
    assert "name" in caught.value.message_dict


def test_ordinary_names_pass(db):
    endpoint = ProviderEndpoint.objects.create(name="demo", kind="scripted")
    AgentProfile(slug="demo", name="Demo (offline)", model=f"{endpoint.name}/echo").full_clean()
