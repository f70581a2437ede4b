"""Settling a run always ends it (issue 17, finding 4): when the database refuses the run's
final write, the client still gets an ``error`` frame, the row ends as ``error`` and the
conversation's run slot is free, instead of a run left ``running`` and a UI streaming forever.

The database itself refuses (a trigger on the runs table), as a full disk or a lost
connection would: nothing of ours is replaced.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from agents.runs import RunManager
from conversations.models import Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

REFUSAL = "the database refused the finished run"
SQLITE_TRIGGER = f"""
CREATE TRIGGER refuse_a_finished_run BEFORE UPDATE OF status ON conversations_run
WHEN NEW.status IN ('done', 'partial')
BEGIN SELECT RAISE(ABORT, '{REFUSAL}'); END
"""
POSTGRES_TRIGGER = [
    f"""
CREATE FUNCTION refuse_a_finished_run() RETURNS trigger AS $$
BEGIN
  IF NEW.status IN ('done', 'partial') THEN RAISE EXCEPTION '{REFUSAL}'; END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql
""",
    """
CREATE TRIGGER refuse_a_finished_run BEFORE UPDATE ON conversations_run
FOR EACH ROW EXECUTE FUNCTION refuse_a_finished_run()
""",
]


@pytest.fixture
def finished_runs_refused(db) -> Iterator[None]:
    """The database refuses to mark any run ``done`` or ``partial`` (other writes pass)."""
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        for statement in POSTGRES_TRIGGER if postgres else [SQLITE_TRIGGER]:
            cursor.execute(statement)
    yield
    # Transactional tests keep the schema: the trigger must not outlive this test.
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("DROP TRIGGER IF EXISTS refuse_a_finished_run ON conversations_run")
            cursor.execute("DROP FUNCTION IF EXISTS refuse_a_finished_run()")
        else:
            cursor.execute("DROP TRIGGER IF EXISTS refuse_a_finished_run")


async def test_a_run_whose_final_write_is_refused_still_ends_with_an_error_frame(
    user, conversation, fast_demo, finished_runs_refused
):
    manager = RunManager()
    frames: list[dict[str, Any]] = []

    async def collect(frame: dict[str, Any]) -> None:
        frames.append(frame)

    manager.subscribe(str(conversation.id), collect)
    conversation_id = str(conversation.id)
    await manager.start(user_id=user.id, conversation_id=conversation_id, content="hello")
    await manager.wait(conversation_id)
    await manager.drain()

    last = frames[-1]
    assert (last["type"], last.get("code")) == ("error", "run_failed"), last["type"]
    assert last["message"] == "the reply could not be saved"
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    run = await sync_to_async(Run.objects.get)(conversation=conversation)
    assert (run.status, run.error) == ("error", "the reply could not be saved")
    assert await sync_to_async(
        Message.objects.filter(conversation=conversation, role="user").exists
    )()
    # The slot is free: the next message starts a run (not refused as busy).
    await manager.start(user_id=user.id, conversation_id=conversation_id, content="again")
    await manager.wait(conversation_id)
