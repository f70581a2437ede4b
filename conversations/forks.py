"""Forking: a new, independent conversation from a deep copy of another up to one message.

As seed 004's ``fork({id, through})``: the boundary message is included, the source is left
as it is, and the fork remembers where it came from. Its sections (those before the boundary),
messages and workspace files are copied; its usage starts at zero (runs are not copied). Only
the chosen branch is copied (the store reads nothing else): the fork starts without
alternatives, and a boundary on another alternative is not found.
"""

from __future__ import annotations

import uuid
from typing import Any, cast

from django.db import transaction

from orkestrel.core import ConversationSnapshot
from orkestrel.refusals import Refusal
from workspaces.models import Workspace
from workspaces.stores import DjangoWorkspaceStore

from .models import Conversation, Run
from .services import User, get_conversation
from .stores import DjangoConversationStore
from .writer import stored_thinking, write_thinking

__all__ = ["ForkBusy", "cut_snapshot", "fork_conversation"]

FORK_SUFFIX = " (fork)"
TITLE_MAX = 200


class ForkBusy(RuntimeError, Refusal):
    """The source conversation has a run going, or paused for a person's approval: fork it
    once the answer is in (a paused run's held calls have placeholder results that only
    their approvals, which stay with the source, can decide)."""

    code = "busy"
    status_code = 409


def cut_snapshot(snapshot: ConversationSnapshot, message_id: str) -> dict[str, Any]:
    """``snapshot`` up to and including ``message_id`` (``LookupError`` if it holds none).

    A boundary in the live tail keeps every section; one inside a folded section keeps the
    sections before it, and that section's originals up to the boundary become the live
    tail. The rollup summary is kept only when every section is.
    """
    sections = list(snapshot.get("sections", []))
    tail = list(snapshot.get("messages", []))
    for index, message in enumerate(tail):
        if message["id"] == message_id:
            cut: dict[str, Any] = {"sections": sections, "messages": tail[: index + 1]}
            if "summary" in snapshot:
                cut["summary"] = snapshot["summary"]
            return cut
    for position, section in enumerate(sections):
        originals = list(section["messages"])
        for index, message in enumerate(originals):
            if message["id"] == message_id:
                return {"sections": sections[:position], "messages": originals[: index + 1]}
    raise LookupError(message_id)


def _title(title: str) -> str:
    base = title or "Conversation"
    return base[: TITLE_MAX - len(FORK_SUFFIX)] + FORK_SUFFIX


def fork_conversation(*, user: User, conversation_id: str, message_id: str) -> Conversation:
    """Fork one of the user's conversations after ``message_id`` (included).

    Raises:
        Http404: not the user's conversation.
        LookupError: the conversation holds no message ``message_id``.
        ForkBusy: a run is going on the source, or waits for approvals.
    """
    source = get_conversation(user=user, conversation_id=conversation_id)
    owner = source.owner_id
    going = set(
        Run.objects.filter(
            conversation=source,
            status__in=(
                Run.Status.QUEUED,
                Run.Status.RUNNING,
                Run.Status.AWAITING_APPROVAL,
                Run.Status.AWAITING_INPUT,
            ),
        ).values_list("status", flat=True)
    )
    if Run.Status.AWAITING_INPUT in going:
        raise ForkBusy("the agent waits for your answer to its question: answer it first")
    if Run.Status.AWAITING_APPROVAL in going:
        raise ForkBusy("a tool call in this conversation waits for your approval: decide it first")
    if going:
        raise ForkBusy("an answer is still running in this conversation")
    snapshot = DjangoConversationStore(owner=owner).get_sync(str(source.pk))
    if snapshot is None:
        raise LookupError(message_id)
    cut = cut_snapshot(snapshot, message_id)
    workspaces = DjangoWorkspaceStore(owner=owner)
    files = workspaces.get_sync(str(source.workspace_id)) if source.workspace_id else None
    with transaction.atomic():
        workspace = Workspace.objects.create(owner_id=owner, name=_title(source.title))
        if files is not None and files["files"]:
            workspaces.set_sync({"id": str(workspace.pk), "files": files["files"]})
        fork = Conversation.objects.create(
            id=uuid.uuid4(),
            owner_id=owner,
            title=_title(source.title),
            profile=source.profile,
            origin=source.origin,
            model=source.model,
            thinking=source.thinking,
            read_only=source.read_only,
            skills=list(source.skills),
            forked_from=source,
            forked_at=message_id,
            workspace=workspace,
        )
        copy = cast(ConversationSnapshot, {"id": str(fork.pk), **cut})
        DjangoConversationStore(owner=owner).set_sync(copy)
        # The answers' reasoning lives beside the kit's messages: copied too (ids past the
        # cut are not in the fork, and skipped).
        write_thinking(fork.pk, stored_thinking(source.pk))
    return fork
