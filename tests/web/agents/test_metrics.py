"""``/metrics``: Prometheus figures of this process's runs, read only with the token or by
staff (anyone else gets a 404, as for a page that is not there)."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from agents.models import ProviderEndpoint
from conversations.models import Conversation
from tests.providers.turns import reply

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

TOKEN = "metrics-tests-token-0f3a"
WRITE = {"operation": "write", "path": "a.md", "content": "A"}
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture(autouse=True)
def token(settings) -> None:
    settings.METRICS_TOKEN = TOKEN


def scrape(client: Client | None = None, **headers: str) -> Samples:
    response = (client or Client()).get("/metrics", headers=headers)
    assert response.status_code == 200, response.status_code
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def figure(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


MODEL = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "openai"}


async def test_a_run_counts_its_tokens_time_cost_tool_call_and_follower(
    user, editor, stub, manager
):
    def setup() -> Conversation:
        profile = editor()
        ProviderEndpoint.objects.filter(name="stub").update(
            prices={"m": {"input": 1000.0, "output": 2000.0}}
        )
        return Conversation.objects.create(owner=user, title="Notes", profile=profile)

    chat = await sync_to_async(setup)()
    stub.enqueue(reply("openai", calls=[("c1", "workspace", WRITE)]), reply("openai", ["Written."]))
    auth = {"Authorization": f"Bearer {TOKEN}"}
    before = await sync_to_async(scrape)(**auth)
    socket, _ = await connect(user, chat)
    following = await sync_to_async(scrape)(**auth)
    assert figure(following, "orkestrel_followers", transport="websocket") == 1 + figure(
        before, "orkestrel_followers", transport="websocket"
    )
    await socket.send_json_to({"type": "send", "content": "write a"})
    await until(socket, "finish")
    await socket.disconnect()
    after = await sync_to_async(scrape)(**auth)

    def grew(name: str, **labels: str) -> float:
        return figure(after, name, **labels) - figure(before, name, **labels)

    run = {"kind": "chat", "profile": "editor", "status": "done", "stop_reason": "done"}
    assert grew("orkestrel_runs_total", **run) == 1
    assert grew("orkestrel_tool_calls_total", tool="workspace", decision="allow", outcome="value")
    model = {**MODEL, "gen_ai_request_model": "m"}
    # Two model requests, each 10 tokens in and 5 out (the stub's usage).
    assert grew("gen_ai_client_token_usage_count", **model, gen_ai_token_type="input") == 2
    assert grew("gen_ai_client_token_usage_sum", **model, gen_ai_token_type="output") == 10
    assert grew("gen_ai_client_operation_duration_seconds_count", **model, error_type="") == 2
    assert grew("gen_ai_client_time_to_first_token_seconds_count", **model) == 2
    # 20 tokens in at $1000 a million, 10 out at $2000: 4 cents.
    assert grew("orkestrel_cost_usd_total", profile="editor", gen_ai_request_model="m") == (
        pytest.approx(0.04)
    )
    assert figure(after, "orkestrel_followers", transport="websocket") == figure(
        before, "orkestrel_followers", transport="websocket"
    )
    assert figure(after, "orkestrel_approvals_waiting") == 0
    assert figure(after, "orkestrel_jobs", state="running") == 0
    # No user, conversation or run id is a label.
    labels = {name for _, pairs in after for name, _ in pairs}
    assert not labels & {"user", "user_id", "conversation", "conversation_id", "run", "run_id"}


def test_metrics_are_there_only_for_the_token_or_staff(db):
    assert Client().get("/metrics").status_code == 404
    wrong = Client().get("/metrics", headers={"Authorization": "Bearer not-the-token"})
    assert wrong.status_code == 404
    people = get_user_model().objects
    member = Client()
    member.force_login(people.create_user("mia", password="pw-mia-123"))
    assert member.get("/metrics").status_code == 404
    staff = Client()
    staff.force_login(people.create_user("sam", password="pw-sam-123", is_staff=True))
    answered = staff.get("/metrics")
    assert answered.status_code == 200
    assert answered["Content-Type"].startswith("text/plain")
    assert b"# TYPE orkestrel_jobs gauge" in answered.content
    token = Client().get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert token.status_code == 200


def test_without_a_token_configured_no_bearer_reads_metrics(db, settings):
    settings.METRICS_TOKEN = ""
    assert Client().get("/metrics", headers={"Authorization": "Bearer "}).status_code == 404
