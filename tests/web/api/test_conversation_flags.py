"""``/api/conversations/``: pinning and archiving (``PATCH``), the list's ``pinned`` and
``archived`` filters, search results' ``snippet``, and the origin of a browser's new chat."""

from __future__ import annotations

import pytest

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message

pytestmark = pytest.mark.django_db


@pytest.fixture
def demo(db):
    return ensure_demo_profile()


def _ids(response) -> list[str]:
    assert response.status_code == 200, response.content
    return [row["id"] for row in response.json()["results"]]


def test_patch_pins_and_archives_without_touching_the_order(api, alice, demo):
    mine = Conversation.objects.create(owner=alice, title="t", profile=demo)
    before = Conversation.objects.get(pk=mine.pk).updated
    url = f"/api/conversations/{mine.pk}/"
    body = api.patch(url, {"pinned": True}, format="json").json()
    assert body["pinned"] is True and body["archived"] is False
    body = api.patch(url, {"archived": True, "pinned": False}, format="json").json()
    assert body["pinned"] is False and body["archived"] is True
    mine.refresh_from_db()
    assert (mine.pinned, mine.archived, mine.updated) == (False, True, before)
    assert api.get(url).json()["archived"] is True


def test_patch_with_a_non_boolean_flag_is_a_field_error_and_changes_nothing(api, alice, demo):
    mine = Conversation.objects.create(owner=alice, title="t", profile=demo)
    url = f"/api/conversations/{mine.pk}/"
    response = api.patch(url, {"title": "new", "pinned": "maybe"}, format="json")
    assert response.status_code == 400 and "pinned" in response.json()["errors"]
    mine.refresh_from_db()
    assert (mine.title, mine.pinned) == ("t", False)


def test_another_users_conversation_cannot_be_pinned(api, bob, demo):
    theirs = Conversation.objects.create(owner=bob, title="t", profile=demo)
    response = api.patch(f"/api/conversations/{theirs.pk}/", {"pinned": True}, format="json")
    assert response.status_code == 404
    theirs.refresh_from_db()
    assert theirs.pinned is False


def test_the_list_filters_by_pinned_and_archived(api, alice, demo):
    plain = Conversation.objects.create(owner=alice, title="plain", profile=demo)
    pinned = Conversation.objects.create(owner=alice, title="pinned", profile=demo, pinned=True)
    archived = Conversation.objects.create(
        owner=alice, title="archived", profile=demo, archived=True
    )
    assert _ids(api.get("/api/conversations/")) == [str(archived.pk), str(pinned.pk), str(plain.pk)]
    assert _ids(api.get("/api/conversations/?archived=false")) == [str(pinned.pk), str(plain.pk)]
    assert _ids(api.get("/api/conversations/?archived=true")) == [str(archived.pk)]
    assert _ids(api.get("/api/conversations/?pinned=true&archived=false")) == [str(pinned.pk)]
    assert _ids(api.get("/api/conversations/?pinned=false&archived=false")) == [str(plain.pk)]


def test_a_filter_that_is_not_a_boolean_is_a_400_naming_it(api, alice, demo):
    response = api.get("/api/conversations/?archived=maybe")
    assert response.status_code == 400
    assert response.json()["errors"] == {"archived": ["Use true or false."]}


def test_search_results_carry_an_escaped_snippet_with_the_match_marked(api, alice, demo):
    found = Conversation.objects.create(owner=alice, title="Trip", profile=demo)
    Message.objects.create(
        conversation=found, position=0, message_id="m0", role="user", content="Where to eat?"
    )
    Message.objects.create(
        conversation=found,
        position=1,
        message_id="m1",
        role="assistant",
        content="Try the <b>Pastéis</b>\n\nof Belém: pastéis are best warm.",
    )
    titled = Conversation.objects.create(owner=alice, title="Pastéis list", profile=demo)
    rows = api.get("/api/conversations/search/?q=PASTéIS").json()["results"]
    snippets = {row["id"]: row["snippet"] for row in rows}
    assert snippets == {
        str(found.pk): (
            "Try the &lt;b&gt;<mark>Pastéis</mark>&lt;/b&gt; of Belém: "
            "<mark>pastéis</mark> are best warm."
        ),
        str(titled.pk): None,
    }


def test_search_finds_archived_conversations_and_says_so(api, alice, demo):
    Conversation.objects.create(owner=alice, title="Old trip", profile=demo, archived=True)
    rows = api.get("/api/conversations/search/?q=trip").json()["results"]
    assert [row["archived"] for row in rows] == [True]


def test_a_conversation_the_browser_creates_begins_in_the_chat(session_client, api, alice, demo):
    browser = session_client(alice)
    page = browser.get("/")
    token = page.cookies["csrftoken"].value
    made = browser.post("/api/conversations/", {}, format="json", HTTP_X_CSRFTOKEN=token)
    assert made.status_code == 201 and made.json()["origin"] == "chat"
    assert api.post("/api/conversations/", {}, format="json").json()["origin"] == "api"


def test_an_untitled_conversation_is_listed_with_the_start_of_its_first_message(api, alice, demo):
    untitled = Conversation.objects.create(owner=alice, profile=demo)
    text = "Plan  a\ntrip " * 30
    Message.objects.create(
        conversation=untitled, position=0, message_id="m0", role="user", content=text
    )
    row = api.get("/api/conversations/").json()["results"][0]
    assert row["preview"] == " ".join(text[:100].split())
    assert row["preview"].startswith("Plan a trip Plan a trip")
