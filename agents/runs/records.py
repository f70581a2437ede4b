"""The run's database side: opening, checkpointing and finishing ``Run`` rows, and recovery."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from conversations.models import Conversation, Run
from conversations.stores import DjangoConversationStore
from orkestrel.core import AgentResult, Message, TokenUsage, create_conversation

from ..runtime.session import LoadedSession, load_session
from .payloads import committed_payload

__all__ = [
    "TITLE_LENGTH",
    "finish_run",
    "prepare_run",
    "recover_interrupted",
    "save_checkpoints",
]

TITLE_LENGTH = 60


def save_checkpoints(rows: list[tuple[int, str, str]]) -> None:
    """Save every active run's in-flight text in one ``executemany``.

    Not ``bulk_update``: its ``CASE WHEN`` compilation is pure Python on the database thread,
    and every millisecond that thread holds the GIL delays the event loop's socket writes.
    """
    table = connection.ops.quote_name(Run._meta.db_table)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(
            f"UPDATE {table} SET content = %s, thinking = %s WHERE id = %s",
            [(content, thinking, run_id) for run_id, content, thinking in rows],
        )


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


def _start_run(conversation_id: str, content: str) -> tuple[int, TokenUsage, str]:
    run = Run.objects.create(
        conversation_id=conversation_id, status="running", started=timezone.now()
    )
    Conversation.objects.filter(id=conversation_id).update(updated=timezone.now())
    # An untitled conversation is named after its first message, as chat apps do.
    title = " ".join(content.split())[:TITLE_LENGTH]
    if title:
        Conversation.objects.filter(id=conversation_id, title="").update(title=title)
    prompt, completion, total, title = Conversation.objects.filter(id=conversation_id).values_list(
        "usage_prompt", "usage_completion", "usage_total", "title"
    )[0]
    return run.id, TokenUsage(prompt, completion, total), title


def prepare_run(
    conversation_id: str, user_id: int, message: Message
) -> tuple[LoadedSession, int, TokenUsage, dict[str, Any], str]:
    """Load the session, store the user message and open the ``Run`` row, in one transaction."""
    loaded = load_session(conversation_id, user_id)
    snapshot = loaded.conversation or {"id": conversation_id, "sections": [], "messages": []}
    conversation = create_conversation(snapshot=snapshot)
    conversation.add(message)
    stored = conversation.snapshot()
    with transaction.atomic():
        DjangoConversationStore(owner=user_id).set_sync(stored)
        run_id, usage, title = _start_run(conversation_id, message.content)
    payload = committed_payload([message])[0]
    return replace(loaded, conversation=stored), run_id, usage, payload, title


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
