"""Export and import of a conversation as JSON Lines.

One record per line, in order: the conversation (``{"type": "conversation", "title",
"profile", "summary"}``), then each folded section (``{"type": "section", "id", "summary"}``)
followed by its original messages, then the live messages. A message record is the kit's
message dict (``id``, ``role``, ``content``, ``calls``, ``tool_call_id``, ``images``) with
``"type": "message"`` and ``"section"`` (the section it was folded into, or ``null``); an
answer that reasoned also carries ``"thinking"`` and ``"thinking_ms"`` (kept beside the kit's
message, never sent back to the model), and an answer of a run that recorded its model carries
``"model"`` (``<endpoint>/<model>`` as called) and ``"response_model"`` (as the provider
reported it; ``""`` when it named none).
Importing an export makes a new conversation of the importing user with the same records.
An export holds the chosen branch only: alternatives a regenerate or an edit left (see
``branches``) stay with the source conversation.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from agents.models import AgentProfile
from orkestrel.core import is_message
from orkestrel.core.messages import MessageInput
from orkestrel.storable import first_fault

from .models import Conversation, Run
from .services import User, create_conversation, enabled_profiles, get_conversation
from .stores import DjangoConversationStore
from .writer import Thought, stored_thinking, write_thinking

__all__ = ["MAX_RECORDS", "export_records", "import_records"]

# An import holds its records in memory; the request size limit bounds it too.
MAX_RECORDS = 100_000
# A record's fields beside the kit's message.
_NOT_KIT = ("type", "section", "thinking", "thinking_ms", "model", "response_model")
# What a ``PositiveIntegerField`` holds on every database.
_MAX_THINKING_MS = 2_147_483_647


def export_records(*, user: User, conversation_id: uuid.UUID | str) -> Iterator[dict[str, Any]]:
    """The records of one of the user's conversations (``Http404`` if not theirs)."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    snapshot = DjangoConversationStore(owner=user.pk).get_sync(str(conversation.pk))
    yield {
        "type": "conversation",
        "title": conversation.title,
        "profile": conversation.profile.slug if conversation.profile is not None else None,
        "summary": conversation.summary or None,
    }
    if snapshot is None:
        return
    thoughts = stored_thinking(conversation.pk)
    models = _answered_by(conversation.pk)

    def record(section: str | None, message: Any) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        thought = thoughts.get(message["id"])
        if thought is not None:
            extra.update(thinking=thought.text, thinking_ms=thought.ms)
        model = models.get(message["id"])
        if model is not None:
            extra.update(model=model[0], response_model=model[1])
        return {"type": "message", "section": section, **message, **extra}

    for section in snapshot["sections"]:
        yield {"type": "section", "id": section["id"], "summary": section["summary"]}
        for message in section["messages"]:
            yield record(section["id"], message)
    for message in snapshot["messages"]:
        yield record(None, message)


def _answered_by(conversation_id: uuid.UUID | str) -> dict[str, tuple[str, str]]:
    """Each answer's model as called and as reported, by message id: read from the
    ``committed`` frames its run stored (a run that recorded no model names none)."""
    answered: dict[str, tuple[str, str]] = {}
    runs = (
        Run.objects.filter(conversation_id=conversation_id)
        .exclude(model="")
        .order_by("created", "id")
        .values_list("model", "response_model", "events")
    )
    for model, reported, events in runs.iterator():
        for frame in events or ():
            if isinstance(frame, dict) and frame.get("type") == "committed":
                for message in frame.get("messages") or ():
                    if message.get("role") == "assistant":
                        answered[message["id"]] = (model, reported)
    return answered


def _invalid(line: int, reason: str) -> ValidationError:
    return ValidationError({"records": [f"line {line}: {reason}"]})


def _parse(lines: list[str]) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise _invalid(number, "not valid JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("type"), str):
            raise _invalid(number, "a record is a JSON object with a string type")
        # Every string of a record reaches a column (or a query: the profile's slug).
        fault = first_fault(record)
        if fault is not None:
            raise _invalid(number, fault.message)
        records.append(record)
        if len(records) > MAX_RECORDS:
            raise _invalid(number, f"at most {MAX_RECORDS} records")
    if not records or records[0]["type"] != "conversation":
        raise ValidationError({"records": ["the first record must be the conversation"]})
    return records


def _thought(record: dict[str, Any], number: int) -> Thought | None:
    """A message record's reasoning, if it carries some."""
    text, ms = record.get("thinking"), record.get("thinking_ms")
    if text is None or text == "":
        return None
    if not isinstance(text, str) or not (
        ms is None or (type(ms) is int and 0 <= ms <= _MAX_THINKING_MS)
    ):
        raise _invalid(number, "thinking is a string, thinking_ms a count of milliseconds")
    return Thought(text, ms)


def _snapshot(
    records: list[dict[str, Any]], key: str, thoughts: dict[str, Thought]
) -> dict[str, Any]:
    """The kit snapshot the records spell; their reasoning goes into ``thoughts``."""
    sections: dict[str, dict[str, Any]] = {}
    live: list[MessageInput] = []
    for number, record in enumerate(records[1:], 2):
        kind = record["type"]
        if kind == "section":
            section_id, summary = record.get("id"), record.get("summary")
            if not isinstance(section_id, str) or not isinstance(summary, str):
                raise _invalid(number, "a section has a string id and summary")
            if section_id in sections or live:
                raise _invalid(number, "sections come before the live messages, once each")
            sections[section_id] = {"id": section_id, "summary": summary, "messages": []}
        elif kind == "message":
            message = {
                name: value
                for name, value in record.items()
                if name not in _NOT_KIT and value is not None
            }
            if not is_message(message):
                raise _invalid(number, "not a valid message")
            thought = _thought(record, number)
            if thought is not None:
                thoughts[record["id"]] = thought
            section = record.get("section")
            if section is None:
                live.append(message)
            elif section in sections and not live:
                sections[section]["messages"].append(message)
            else:
                raise _invalid(number, f"unknown or closed section {section!r}")
        else:
            raise _invalid(number, f"unknown record type {kind!r}")
    snapshot: dict[str, Any] = {"id": key, "sections": list(sections.values()), "messages": live}
    summary = records[0].get("summary")
    if isinstance(summary, str) and summary:
        snapshot["summary"] = summary
    return snapshot


def import_records(*, user: User, lines: list[str]) -> Conversation:
    """A new conversation of ``user`` holding the records (``ValidationError`` naming the
    first bad line; nothing is stored then)."""
    records = _parse(lines)
    head = records[0]
    title = head.get("title") if isinstance(head.get("title"), str) else ""
    slug = head.get("profile")
    profile: AgentProfile | None = None
    if isinstance(slug, str):
        profile = enabled_profiles(user).filter(slug=slug).first()
    with transaction.atomic():
        conversation = create_conversation(user=user, profile=profile, title=title or "")
        thoughts: dict[str, Thought] = {}
        snapshot = _snapshot(records, str(conversation.pk), thoughts)
        try:
            DjangoConversationStore(owner=user.pk).set_sync(snapshot)  # type: ignore[arg-type]
        except ValueError as error:
            raise ValidationError({"records": [str(error)]}) from None
        if thoughts:
            write_thinking(conversation.pk, thoughts)
    return conversation
