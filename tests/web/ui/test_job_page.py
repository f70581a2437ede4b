"""An agent job's page (a delegate tool card links it): what it was asked, its answer, its
parent and children; only its owner sees it."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from agents.models import AgentJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def tree(alice, default_profile) -> tuple[AgentJob, AgentJob]:
    """A done parent job and the child its delegate call started."""
    parent = AgentJob.objects.create(
        user=alice,
        profile=default_profile,
        job={"provider": "helper", "messages": [{"role": "user", "content": "plan a trip"}]},
        status="done",
        result={"content": "Went **well**", "thinking": "weighing the options"},
    )
    child = AgentJob.objects.create(
        user=alice,
        profile=default_profile,
        job={
            "provider": "helper",
            "system": "You find trains.",
            "messages": [{"role": "user", "content": "find a train <b>now</b>"}],
        },
        status="error",
        error="the model did not answer",
        parent=parent,
        depth=1,
    )
    return parent, child


def test_a_job_page_shows_the_question_the_rendered_answer_and_its_children(
    alice_client: Client, tree
):
    parent, child = tree
    page = alice_client.get(reverse("agents:job", args=[parent.pk]))
    assert page.status_code == 200
    html = page.content.decode()
    assert "plan a trip" in html and "<strong>well</strong>" in html
    assert "weighing the options" in html
    assert reverse("agents:job", args=[child.pk]) in html
    # The question is the transcript's, not a flash message of the page.
    assert 'class="flash"' not in html


def test_a_child_job_page_links_its_parent_and_shows_why_it_failed_escaped(
    alice_client: Client, tree
):
    parent, child = tree
    html = alice_client.get(reverse("agents:job", args=[child.pk])).content.decode()
    assert reverse("agents:job", args=[parent.pk]) in html
    assert "the model did not answer" in html and "You find trains." in html
    assert "find a train &lt;b&gt;now&lt;/b&gt;" in html and "<b>now</b>" not in html


def test_another_users_job_is_not_found_and_a_visitor_is_sent_to_log_in(bob, tree):
    parent, _ = tree
    other = Client()
    other.force_login(bob)
    assert other.get(reverse("agents:job", args=[parent.pk])).status_code == 404
    visitor = Client().get(reverse("agents:job", args=[parent.pk]))
    assert visitor.status_code == 302 and reverse("login") in visitor["Location"]


def test_a_running_jobs_page_shows_how_far_it_got_and_reloads_itself(
    alice_client: Client, alice, default_profile
):
    job = AgentJob.objects.create(
        user=alice,
        profile=default_profile,
        job={"provider": "helper", "messages": [{"role": "user", "content": "count trains"}]},
        status="running",
        attempts=1,
        progress={
            "turns": 2,
            "tools": 1,
            "last_tool": "http_fetch",
            "tokens": 1234,
            "text": "So far <i>three</i> trains",
        },
    )
    page = alice_client.get(reverse("agents:job", args=[job.pk]))
    html = page.content.decode()
    assert '<meta http-equiv="refresh" content="3"' in html
    assert "2 steps, 1 tool call (last: http_fetch), 1234 tokens" in html
    assert "So far &lt;i&gt;three&lt;/i&gt; trains" in html
    # The page's policy has no say over a refresh; it still forbids scripts it did not send.
    assert "script-src 'self'" in page["Content-Security-Policy"]


def test_a_settled_jobs_page_keeps_its_last_progress_and_stops_reloading(
    alice_client: Client, tree
):
    parent, _ = tree
    parent.progress = {"turns": 3, "tools": 2, "last_tool": "delegate", "tokens": 40, "text": "x"}
    parent.save(update_fields=["progress"])
    html = alice_client.get(reverse("agents:job", args=[parent.pk])).content.decode()
    assert "http-equiv" not in html
    assert "3 steps, 2 tool calls (last: delegate), 40 tokens" in html
    assert 'data-testid="job-writing"' not in html
