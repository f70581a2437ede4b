"""The run's database side: opening, checkpointing and finishing ``Run`` rows, and recovery."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from conversations.models import Conversation, Run
from conversations.stores import DjangoConversationStore
from orkestrel.core import AgentResult, Message, TokenUsage, create_conversation
from workspaces.stores import DjangoWorkspaceStore

from ..runtime.spec import LoadedSession, load_spec
from .payloads import committed_payload

__all__ = [
    "TITLE_LENGTH",
    "RunRecord",
    "owned_run",
    "run_conversation",
    "stored_events",
    "finish_run",
    "prepare_run",
    "recover_interrupted",
    "save_checkpoints",
    "save_events",
]

TITLE_LENGTH = 60


def save_checkpoints(rows: list[tuple[int, str, str]]) -> None:
    """Save every active run's in-flight text in one ``UPDATE`` (per chunk of rows).

    One statement, not ``executemany`` nor ``bulk_update``: the database thread shares the GIL
    with the event loop, and every statement it steps through hands the GIL back and forth
    (a ``bulk_update`` also compiles its ``CASE`` in Python). With 200 runs streaming, 200
    handoffs each second stalled every stream for tens of milliseconds.
    """
    table = connection.ops.quote_name(Run._meta.db_table)
    limit = connection.features.max_query_params or 5_000
    size = max(1, limit // 5)
    with transaction.atomic(), connection.cursor() as cursor:
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            cases = " ".join(["WHEN %s THEN %s"] * len(chunk))
            marks = ", ".join(["%s"] * len(chunk))
            params: list[object] = []
            for run_id, content, _ in chunk:
                params += [run_id, content]
            for run_id, _, thinking in chunk:
                params += [run_id, thinking]
            params += [run_id for run_id, _, _ in chunk]
            cursor.execute(
                f"UPDATE {table} SET content = CASE id {cases} END, "
                f"thinking = CASE id {cases} END WHERE id IN ({marks})",
                params,
            )


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as stored: what the API's run body shows."""

    id: int
    conversation_id: str
    status: str
    stop_reason: str
    error: str
    content: str
    thinking: str
    usage: dict[str, int]
    created: datetime
    started: datetime | None
    finished: datetime | None


def owned_run(user_id: int, run_id: int) -> RunRecord | None:
    """The run ``run_id`` if it is on one of the user's conversations, else ``None``."""
    row = (
        Run.objects.filter(id=run_id, conversation__owner_id=user_id)
        .values(
            "id",
            "conversation_id",
            "status",
            "stop_reason",
            "error",
            "content",
            "thinking",
            "usage_prompt",
            "usage_completion",
            "usage_total",
            "created",
            "started",
            "finished",
        )
        .first()
    )
    if row is None:
        return None
    usage = {
        "prompt": row.pop("usage_prompt"),
        "completion": row.pop("usage_completion"),
        "total": row.pop("usage_total"),
    }
    row["conversation_id"] = str(row["conversation_id"])
    return RunRecord(usage=usage, **row)


def run_conversation(run_id: int) -> str:
    """The id of the conversation run ``run_id`` belongs to."""
    return str(Run.objects.filter(id=run_id).values_list("conversation_id", flat=True).get())


def stored_events(run_id: int) -> list[dict[str, Any]] | None:
    """A settled run's stored frames; ``None`` while the run is still going."""
    row = Run.objects.filter(id=run_id).values("status", "events").first()
    if row is None:
        return []
    if row["status"] in ("queued", "running"):
        return None
    return list(row["events"] or [])


def save_events(run_id: int, frames: list[dict[str, Any]]) -> None:
    """Store a settled run's frames, for followers that come after it left memory."""
    Run.objects.filter(id=run_id).update(events=frames)


def finish_run(run_id: int, status: str, result: AgentResult | None, error: str) -> None:
    fields: dict[str, Any] = {"status": status, "finished": timezone.now(), "error": error}
    if result is not None:
        fields.update(
            stop_reason=result.stop, content=result.content, thinking=result.thinking or ""
        )
        if result.usage is not None:
            fields.update(
                usage_prompt=result.usage.prompt,
                usage_completion=result.usage.completion,
                usage_total=result.usage.total,
            )
    Run.objects.filter(id=run_id).update(**fields)


def _start_run(conversation_id: str, content: str, title: str) -> tuple[int, str]:
    """Open the ``Run`` row; name an untitled conversation. Returns the run id and the title."""
    run = Run.objects.create(
        conversation_id=conversation_id, status="running", started=timezone.now()
    )
    if not title:
        # An untitled conversation is named after its first message, as chat apps do.
        named = " ".join(content.split())[:TITLE_LENGTH]
        if named and Conversation.objects.filter(id=conversation_id, title="").update(title=named):
            return run.id, named
        # Named meanwhile (a rename in another tab): show what is stored.
        title = Conversation.objects.filter(id=conversation_id).values_list("title", flat=True)[0]
    return run.id, title


def prepare_run(
    conversation_id: str, user_id: int, message: Message
) -> tuple[LoadedSession, int, TokenUsage, dict[str, Any], str]:
    """Load the session, store the user message and open the ``Run`` row, in one transaction.

    Few statements on purpose: each one hands the GIL to the event loop and waits to get it
    back, so under load a start's wall time grows with its statement count.
    """
    with transaction.atomic():
        spec = load_spec(conversation_id, user_id)
        # An append, not a ``set``: the history is read under the append's lock, not re-checked.
        stored = DjangoConversationStore(owner=user_id).append_sync(conversation_id, message)
        workspace = DjangoWorkspaceStore(owner=user_id).get_sync(spec.workspace_id)
        run_id, title = _start_run(conversation_id, message.content, spec.title)
    payload = committed_payload([message])[0]
    return LoadedSession(spec, stored, workspace), run_id, spec.usage, payload, title


def recover_interrupted() -> int:
    """Close runs a previous process left unfinished as ``interrupted``, keeping their text.

    The partial answer (last checkpoint) joins the conversation as an assistant message.
    """
    store = DjangoConversationStore()
    closed = 0
    for run in Run.objects.filter(status__in=("queued", "running")).select_related("conversation"):
        if run.content:
            snapshot = store.get_sync(str(run.conversation_id))
            if snapshot is not None:
                conversation = create_conversation(snapshot=snapshot)
                conversation.add({"role": "assistant", "content": run.content})
                store.set_sync(conversation.snapshot())
        Run.objects.filter(id=run.id).update(
            status="interrupted", stop_reason="interrupted", finished=timezone.now()
        )
        closed += 1
    return closed
