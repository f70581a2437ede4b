"""The operators' read-only admin shows what the store and the runtime wrote."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from conversations.admin import LIVE_LIMIT
from conversations.models import AuthorityDecision, Conversation, Run, ToolFailure
from orkestrel.core import create_conversation

from .helpers import chat, compacted, new_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def operator() -> Client:
    admin = get_user_model().objects.create_superuser("root", email="root@example.com")
    client = Client()
    client.force_login(admin)
    return client


@pytest.fixture
def written(django_store):
    """A compacted conversation saved through the store, with a run and two decisions."""
    conversation = compacted()
    conversation.add({"role": "user", "content": "<script>alert(1)</script>"})
    django_store.set_sync(conversation.snapshot())
    row = Conversation.objects.get(pk=conversation.id)
    started = timezone.now()
    run = Run.objects.create(
        conversation=row,
        status=Run.Status.ERROR,
        stop_reason="provider_error",
        usage_prompt=12,
        usage_completion=3,
        usage_total=15,
        error="upstream 502 from local",
        started=started,
        finished=started + timedelta(seconds=2),
    )
    AuthorityDecision.objects.create(
        run=run,
        conversation=row,
        tool_call_id="c9",
        tool_name="delete_file",
        arguments={"path": "/etc/passwd"},
        rule_label="#2 delete_* → deny",
        zone="files",
        allowed=False,
        reason="never delete",
    )
    AuthorityDecision.objects.create(
        run=run, conversation=row, tool_name="read_file", zone="default", allowed=True
    )
    return conversation, row


def test_the_changelist_lists_conversations_with_their_message_counts(operator, written) -> None:
    conversation, row = written
    response = operator.get(reverse("admin:conversations_conversation_changelist"))
    assert response.status_code == 200
    assert str(row) in response.text
    assert response.context["cl"].result_list[0].message_total == 7


def test_the_change_page_shows_the_transcript_the_store_wrote(operator, written) -> None:
    conversation, row = written
    response = operator.get(reverse("admin:conversations_conversation_change", args=[row.pk]))
    assert response.status_code == 200
    page = response.text
    section = conversation.sections[0]
    assert "<details" in page and section.summary in page and section.id in page
    for message in (*section.messages, *conversation.messages()):
        assert message.content.replace("<", "&lt;").replace(">", "&gt;") in page
    assert "<script>alert(1)</script>" not in page
    assert "remember" in page and "answers <code>c1</code>" in page
    assert "1 image attached" in page
    # The live tail in its order, after the section.
    live = [m.content for m in conversation.messages()]
    assert page.index(section.summary) < page.index(live[0]) < page.index("What is my name?")


def test_the_change_page_shows_runs_and_authority_decisions(operator, written) -> None:
    _, row = written
    page = operator.get(reverse("admin:conversations_conversation_change", args=[row.pk])).text
    for text in ("provider_error", "upstream 502 from local", "15 (12 prompt + 3 completion)"):
        assert text in page
    assert "2.00 s" in page
    assert "delete_file" in page and "#2 delete_* → deny" in page and "never delete" in page
    assert "/etc/passwd" in page and "read_file" in page


def test_only_the_title_is_editable(operator, written) -> None:
    _, row = written
    url = reverse("admin:conversations_conversation_change", args=[row.pk])
    form = operator.get(url).context["adminform"].form
    assert list(form.fields) == ["title"]
    data = {"title": "Renamed"}
    for prefix in ("runs", "decisions", "tool_failures"):
        data |= {f"{prefix}-TOTAL_FORMS": "0", f"{prefix}-INITIAL_FORMS": "0"}
    response = operator.post(url, data)
    assert response.status_code == 302
    row.refresh_from_db()
    assert row.title == "Renamed" and row.messages.count() == 7


def test_adding_and_deleting_conversations_is_forbidden(operator, written) -> None:
    _, row = written
    assert operator.get(reverse("admin:conversations_conversation_add")).status_code == 403
    delete = reverse("admin:conversations_conversation_delete", args=[row.pk])
    assert operator.post(delete, {"post": "yes"}).status_code == 403
    assert Conversation.objects.filter(pk=row.pk).exists()


def test_runs_and_decisions_have_their_own_read_only_pages(operator, written) -> None:
    _, row = written
    run = row.runs.get()
    failure = ToolFailure.objects.create(
        conversation=row, run=run, tool_call_id="c9", tool_name="http_fetch", error="refused"
    )
    pages = (
        ("run", run.pk),
        ("authoritydecision", row.decisions.first().pk),
        ("toolfailure", failure.pk),
    )
    for name, pk in pages:
        changelist = operator.get(reverse(f"admin:conversations_{name}_changelist"))
        assert changelist.status_code == 200
        page = operator.get(reverse(f"admin:conversations_{name}_change", args=[pk]))
        assert page.status_code == 200
        assert page.context["has_change_permission"] is False
        assert not page.context["adminform"].form.fields
        assert operator.get(reverse(f"admin:conversations_{name}_add")).status_code == 403
    runs = operator.get(reverse("admin:conversations_run_changelist") + "?status=error")
    assert list(runs.context["cl"].result_list) == [run]


def test_a_long_live_tail_shows_only_the_newest_messages(operator, django_store) -> None:
    conversation = create_conversation(id=new_id())
    chat(conversation, LIVE_LIMIT // 2 + 5)
    django_store.set_sync(conversation.snapshot())
    url = reverse("admin:conversations_conversation_change", args=[conversation.id])
    page = operator.get(url).text
    assert "10 earlier live messages not shown" in page
    assert f"answer {LIVE_LIMIT // 2 + 4}" in page and ">question 0<" not in page
