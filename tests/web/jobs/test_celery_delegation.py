"""A delegate tree on real Celery workers: a job posted to the server delegates twice, each
child runs as a job a worker takes, all share the top job's budget, and cancelling the top job
through the API cancels the whole tree.

The processes are ``test_celery_workers``'s (a Daphne server, worker processes, their own
database); the model is a loopback server in this process, answering the tree's requests in
the order it makes them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.providers.server import Reply, StubServer
from tests.providers.turns import openai_turn

from .test_celery_workers import BROKER, api, settled, stack, until  # noqa: F401

pytestmark = pytest.mark.skipif(
    not BROKER, reason="set CELERY_BROKER_URL (Redis or RabbitMQ) to run jobs on Celery workers"
)

BUDGET = 1000

TREE = """
from agents.models import AgentProfile, ProviderEndpoint, Tool
endpoint = ProviderEndpoint.objects.create(name="stub", kind="openai", base_url={url!r})
tool, _ = Tool.objects.update_or_create(
    name="delegate", defaults={{"kind": "builtin", "timeout": 60.0}}
)
made = {{}}
for slug in ("top", "middle", "leaf"):
    made[slug] = AgentProfile.objects.create(
        slug=slug, name=slug, model="stub/m", token_budget={budget} if slug == "top" else None
    )
    made[slug].tools.add(tool)
made["top"].may_delegate_to.add(made["middle"])
made["middle"].may_delegate_to.add(made["leaf"])
print("ok")
"""

FAMILY = """
import json
from agents.models import AgentJob
rows = {{}}
level = [{top!r}]
while level:
    found = list(AgentJob.objects.filter(pk__in=level))
    rows.update({{str(r.pk): {{"depth": r.depth, "budget": r.job.get("budget"),
                  "status": r.status, "parent": r.parent_id and str(r.parent_id)}}
                 for r in found}})
    level = list(AgentJob.objects.filter(parent__in=level).values_list("pk", flat=True))
print(json.dumps(rows))
"""


@pytest.fixture
def stub() -> Iterator[StubServer]:
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


def delegate(call_id: str, profile: str, usage: tuple[int, int]) -> Reply:
    arguments = {"profile": profile, "task": f"over to {profile}"}
    return Reply(openai_turn(calls=[(call_id, "delegate", arguments)], usage=usage))


def test_a_delegate_tree_on_workers_shares_one_budget_and_is_cancelled_from_the_top(
    stack,  # noqa: F811
    api,  # noqa: F811
    stub,
):
    stack.shell(TREE.format(url=stub.url, budget=BUDGET))
    stub.enqueue(
        delegate("c1", "middle", usage=(100, 20)),
        delegate("c2", "leaf", usage=(200, 30)),
        # The leaf's answer starts, then the model server holds it open.
        Reply(openai_turn(["thinking"], end=False), hold=True),
    )
    stack.worker("a", concurrency=4)
    posted = api.post(
        "/api/jobs/", json={"profile": "top", "messages": [{"role": "user", "content": "go"}]}
    )
    assert posted.status_code == 202, posted.text
    top = posted.json()["id"]
    assert stub.holding.wait(30), "the leaf's model call did not start"

    def family() -> dict[str, dict[str, Any]]:
        return json.loads(stack.shell(FAMILY.format(top=top)))

    rows = until(lambda: (found := family()) and len(found) == 3 and found, "the whole tree")
    by_depth = {row["depth"]: row for row in rows.values()}
    # Each child's budget is what its parent had left: the leaf sees what is left of the top's.
    assert by_depth[1]["budget"] == BUDGET - 120
    assert by_depth[2]["budget"] == BUDGET - 120 - 230
    assert all(row["status"] == "running" for row in rows.values())

    assert api.post(f"/api/jobs/{top}/cancel/").status_code == 202
    for job_id in rows:
        assert settled(api, job_id, timeout=20)["status"] == "cancelled"
    # The leaf's model call was stopped, not left to run.
    assert stub.closed.wait(10)
