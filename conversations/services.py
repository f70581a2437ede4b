"""Use cases of the chat UI: list, create, rename and delete conversations, and read their state.

Views and the websocket consumer call these with the acting ``user``; every function that takes
a ``conversation_id`` checks ownership and raises ``Http404`` for a conversation the user does
not own (so its existence does not leak).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Case, Count, Exists, F, OuterRef, Q, QuerySet, Subquery, When
from django.http import Http404
from django.utils.html import escape

from agents.models import AgentProfile, ProviderEndpoint
from orkestrel import protocol
from orkestrel.core import THINKING_LEVELS, estimate_messages
from orkestrel.core import Conversation as KitConversation
from orkestrel.protocol import (
    AnsweredPayload,
    ApprovalPayload,
    BranchPayload,
    ContextPayload,
    MessagePayload,
    PendingPayload,
    QuestionPayload,
    SectionPayload,
    UsagePayload,
    context_payload,
    usage_payload,
)
from workspaces.models import Workspace

from .answered import answered_by
from .approvals import decided_approvals, pending_approvals
from .branches import branch_points
from .documents import document_payloads
from .models import AuthorityDecision, Conversation, Message, Run, Section
from .owned import owned_conversation
from .pending import pending_list
from .questions import pending_questions
from .render_pool import render_all
from .rendering import render_markdown

__all__ = [
    "ConversationState",
    "MessagePayload",
    "LIVE_PAGE",
    "context_readout",
    "conversation_state",
    "earlier_messages",
    "section_originals",
    "choose_model",
    "create_conversation",
    "fill_tool_results",
    "model_choices",
    "default_profile",
    "conversation_profile",
    "effective_profile",
    "delete_conversation",
    "enabled_profiles",
    "get_conversation",
    "list_conversations",
    "mark_conversation",
    "message_payload",
    "rename_conversation",
    "search_snippet",
    "section_payload",
]

User = AbstractBaseUser | AnonymousUser
# The run states a person can retry or continue from.
UNFINISHED = ("error", "interrupted", "partial")
TITLE_MAX = Conversation._meta.get_field("title").max_length or 200


class ConversationState(TypedDict):
    """The committed part of a ``state`` frame (the run snapshot is the live side's)."""

    conversation: dict[str, Any]
    messages: list[MessagePayload]
    sections: list[SectionPayload]
    usage: UsagePayload
    context: ContextPayload
    denials: dict[str, dict[str, str]]
    failures: list[str]
    displays: dict[str, Any]
    last_run: dict[str, Any] | None
    pending: list[PendingPayload]
    approvals: list[ApprovalPayload]
    decisions: dict[str, ApprovalPayload]
    branches: list[BranchPayload]
    questions: list[QuestionPayload]
    earlier: int
    models: dict[str, AnsweredPayload]


# -- ownership -------------------------------------------------------------------------------


def _require_user(user: User) -> AbstractBaseUser:
    if user is None or isinstance(user, AnonymousUser) or not user.is_authenticated:
        raise PermissionDenied("Sign in first.")
    return user


def get_conversation(*, user: User, conversation_id: uuid.UUID | str) -> Conversation:
    """The user's conversation ``conversation_id`` (``Http404`` if absent or someone else's)."""
    owner = _require_user(user)
    found = owned_conversation(conversation_id, owner.pk)
    if found is None:
        raise Http404("No such conversation.")
    return found[0]


# -- profiles --------------------------------------------------------------------------------


def enabled_profiles(user: User | int | None) -> QuerySet[AgentProfile]:
    """The enabled profiles ``user`` may use (operators decide, per user and group), default
    first; ``None``: only the profiles open to everyone."""
    user_id = user if isinstance(user, int) or user is None else user.pk
    return (
        AgentProfile.objects.filter(enabled=True)
        .usable_by(user_id)
        .order_by("-is_default", "name", "slug")
    )


def default_profile(user: User | int | None) -> AgentProfile | None:
    """The user's default profile: the default one when they may use it, else their first
    (as the runtime falls back)."""
    return enabled_profiles(user).first()


def effective_profile(conversation: Conversation) -> AgentProfile | None:
    """The profile ``conversation`` runs on: its own while enabled and open to its owner,
    else the owner's default."""
    return _effective_profile(conversation)


def conversation_profile(user_id: int, conversation_id: str) -> str | None:
    """The slug of the profile the user's conversation runs on (its own while enabled and
    open to them, else their default); ``None`` for a conversation that is not theirs."""
    try:
        conversation = (
            Conversation.objects.select_related("profile")
            .filter(pk=conversation_id, owner_id=user_id)
            .first()
        )
    except ValidationError:
        return None  # not a conversation id at all
    if conversation is None:
        return None
    profile = _effective_profile(conversation)
    return profile.slug if profile is not None else None


def _effective_profile(conversation: Conversation) -> AgentProfile | None:
    profile = conversation.profile
    if (
        profile is not None
        and profile.enabled
        and enabled_profiles(conversation.owner_id).filter(pk=profile.pk).exists()
    ):
        return profile
    return default_profile(conversation.owner_id)


# -- commands --------------------------------------------------------------------------------


def list_conversations(*, user: User, query: str = "") -> QuerySet[Conversation]:
    """The user's conversations, newest first; ``query`` matches titles and message content.

    Each row carries ``preview``: the first user message, for untitled conversations.
    """
    owner = _require_user(user)
    first_user_message = Message.objects.filter(
        conversation=OuterRef("pk"), role=Message.Role.USER
    ).order_by("position")
    conversations = (
        Conversation.objects.filter(owner_id=owner.pk)
        .select_related("profile")
        .annotate(preview=Subquery(first_user_message.values("content")[:1]))
        .order_by("-updated", "-created")
    )
    query = query.strip()
    if query:
        # A document's text matches as a message's does (``Message.document_text``).
        matching = Message.objects.filter(
            Q(content__icontains=query) | Q(document_text__icontains=query),
            conversation=OuterRef("pk"),
        )
        # ``matched``: the first message that matches (``search_snippet`` cuts it; its document's
        # text when the match is there), or ``None`` when only the title does.
        shown = Case(When(content__icontains=query, then=F("content")), default=F("document_text"))
        conversations = conversations.filter(Q(title__icontains=query) | Exists(matching)).annotate(
            matched=Subquery(
                matching.order_by("position").annotate(shown=shown).values("shown")[:1]
            )
        )
    return conversations


# Characters of context a search snippet shows before its first match, and in all.
SNIPPET_BEFORE = 40
SNIPPET_LENGTH = 160


def search_snippet(text: str | None, query: str) -> str | None:
    """The part of ``text`` around the first match of ``query``, as HTML: escaped, each match
    in ``<mark>``, a cut marked ``…`` (``None`` without text)."""
    flat = " ".join((text or "").split())
    if not flat:
        return None
    words = " ".join(query.split())
    pattern = re.compile(re.escape(words), re.IGNORECASE) if words else None
    found = pattern.search(flat) if pattern is not None else None
    start = max(0, found.start() - SNIPPET_BEFORE) if found is not None else 0
    if start > 0:
        space = flat.find(" ", start, found.start() if found is not None else None)
        start = space + 1 if space != -1 else start  # begin on a word
    end = min(len(flat), start + SNIPPET_LENGTH)
    if found is not None:
        end = max(end, found.end())
    if end < len(flat):
        space = flat.rfind(" ", found.end() if found is not None else start, end)
        end = space if space > start else end
    part = flat[start:end]
    html: list[str] = []
    last = 0
    for match in pattern.finditer(part) if pattern is not None else ():
        html.append(escape(part[last : match.start()]))
        html.append(f"<mark>{escape(match.group())}</mark>")
        last = match.end()
    html.append(escape(part[last:]))
    return ("…" if start > 0 else "") + "".join(html) + ("…" if end < len(flat) else "")


def _clean_title(title: str) -> str:
    title = " ".join((title or "").split())
    if len(title) > TITLE_MAX:
        raise ValidationError({"title": f"Keep the title under {TITLE_MAX + 1} characters."})
    return title


def create_conversation(
    *,
    user: User,
    profile: AgentProfile | int | None = None,
    title: str = "",
    origin: str = Conversation.Origin.CHAT,
) -> Conversation:
    """Start a conversation for ``user`` with ``profile`` (default: the default profile).

    Raises:
        ValidationError: ``{"profile": ...}`` for an unknown or disabled profile,
            ``{"title": ...}`` for a title too long.
    """
    owner = _require_user(user)
    chosen: AgentProfile | None
    if profile is None:
        chosen = default_profile(owner)
    else:
        key = profile.pk if isinstance(profile, AgentProfile) else profile
        chosen = enabled_profiles(owner).filter(pk=key).first()
        if chosen is None:
            raise ValidationError({"profile": "Choose an enabled agent profile."})
    conversation = Conversation(
        owner_id=owner.pk, profile=chosen, title=_clean_title(title), origin=origin
    )
    conversation.full_clean()
    with transaction.atomic():
        # Its workspace exists from the start: files can be uploaded before the first message.
        conversation.workspace = Workspace.objects.create(
            owner_id=owner.pk, name=conversation.title or "Workspace"
        )
        conversation.save()
    return conversation


def fill_tool_results(conversation_id: str, results: Mapping[str, str], pending: str) -> str | None:
    """Put the client's tool results in place of the ``pending`` placeholders its calls left
    in the live tail; the first call id that waits for nothing, else ``None`` (all filled).

    Call inside the transaction that starts the next run: a refusal must change nothing.
    """
    rows = {
        row.tool_call_id: row
        for row in Message.objects.filter(
            conversation_id=conversation_id,
            section__isnull=True,
            role=Message.Role.TOOL,
            tool_call_id__in=list(results),
            content=pending,
        )
    }
    for call_id in results:
        if call_id not in rows:
            return call_id
    for call_id, row in rows.items():
        row.content = results[call_id]
    Message.objects.bulk_update(list(rows.values()), ["content"])
    return None


def model_choices(user: User | int | None) -> list[str]:
    """The ``<endpoint>/<model>`` a conversation of ``user`` may choose: the model of every
    profile they may use and each model its endpoint lists, in profile order (a disabled
    endpoint's none)."""
    choices: dict[str, None] = {}
    profiles = list(enabled_profiles(user))
    endpoints = {
        endpoint.name: endpoint
        for endpoint in ProviderEndpoint.objects.filter(
            name__in={profile.endpoint_name for profile in profiles}, enabled=True
        )
    }
    for profile in profiles:
        endpoint = endpoints.get(profile.endpoint_name)
        if endpoint is None:
            continue
        choices[profile.model] = None
        for name in endpoint.models or ():
            choices[f"{endpoint.name}/{name}"] = None
    return list(choices)


def choose_model(
    *,
    user: User,
    conversation_id: uuid.UUID | str,
    model: str | None = None,
    thinking: str | None = None,
    read_only: bool | None = None,
) -> Conversation:
    """Set the conversation's own model, thinking level and read-only mode for its next turns
    (``""`` follows the profile again; ``None`` leaves one as it is); validated first, so a
    refused choice changes nothing.

    Raises:
        ValidationError: ``{"model": ...}`` not one of ``model_choices()``, ``{"thinking":
            ...}`` not a thinking level.
    """
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    fields = []
    if model is not None:
        if model and model not in model_choices(conversation.owner_id):
            raise ValidationError({"model": "Choose one of the models your profiles offer."})
        conversation.model = model
        fields.append("model")
    if thinking is not None:
        if thinking and thinking not in THINKING_LEVELS:
            raise ValidationError(
                {"thinking": f"Choose one of {', '.join(THINKING_LEVELS)} (or blank)."}
            )
        conversation.thinking = thinking
        fields.append("thinking")
    if read_only is not None:
        conversation.read_only = read_only
        fields.append("read_only")
    if fields:
        conversation.save(update_fields=fields)
    return conversation


def rename_conversation(
    *, user: User, conversation_id: uuid.UUID | str, title: str
) -> Conversation:
    """Set the title of one of the user's conversations (``ValidationError`` if empty or long)."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    cleaned = _clean_title(title)
    if not cleaned:
        raise ValidationError({"title": "Enter a title."})
    conversation.title = cleaned
    conversation.full_clean()
    conversation.save(update_fields=["title"])  # a rename is not activity: keep the order
    return conversation


def mark_conversation(
    *,
    user: User,
    conversation_id: uuid.UUID | str,
    pinned: bool | None = None,
    archived: bool | None = None,
) -> Conversation:
    """Pin or archive one of the user's conversations (``None`` leaves a flag as it is)."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    fields = []
    if pinned is not None:
        conversation.pinned = pinned
        fields.append("pinned")
    if archived is not None:
        conversation.archived = archived
        fields.append("archived")
    if fields:
        conversation.save(update_fields=fields)  # not activity: the list keeps its order
    return conversation


def delete_conversation(*, user: User, conversation_id: uuid.UUID | str) -> None:
    """Delete one of the user's conversations with its sections, messages and runs."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    with transaction.atomic():
        conversation.delete()


# -- state -----------------------------------------------------------------------------------


def _rendered(message: Message) -> bool:
    return message.role in (Message.Role.USER, Message.Role.ASSISTANT)


def message_payload(message: Message, html: str | None = None) -> MessagePayload:
    """One message as the UI and the websocket frames carry it (``html`` is sanitized).

    ``html`` is the message's rendering when the caller rendered a batch already.
    """
    if html is None:
        html = render_markdown(message.content) if _rendered(message) else ""
    return protocol.message_payload(
        id=message.message_id,
        role=message.role,
        content=message.content,
        html=html,
        calls=message.calls,
        tool_call_id=message.tool_call_id,
        images_count=len(message.images or ()),
        thinking=message.thinking,
        thinking_ms=message.thinking_ms,
        documents=document_payloads(message.documents),
    )


def section_payload(
    section: Section, messages: list[Message], html: Rendered | None = None
) -> SectionPayload:
    """One compaction section: its recap (text and sanitized ``html``) and its originals.

    ``html`` holds the renderings of a batch rendered already (``render_state``).
    """
    recap = html.sections.get(section.pk) if html is not None else None
    return {
        "id": section.section_id,
        "summary": section.summary,
        "html": render_markdown(section.summary) if recap is None else recap,
        "count": getattr(section, "count", len(messages)),
        "messages": [
            message_payload(message, html.messages.get(message.pk) if html else None)
            for message in messages
        ],
    }


@dataclass(frozen=True, slots=True)
class Rendered:
    """HTML of a conversation's messages and recaps, by primary key."""

    messages: dict[int, str]
    sections: dict[int, str]


def render_state(rows: Sequence[Message], sections: Sequence[Section]) -> Rendered:
    """Render every shown message and every recap as one batch (off the server's GIL)."""
    shown = [row for row in rows if _rendered(row)]
    texts = [row.content for row in shown] + [section.summary for section in sections]
    html = render_all(texts)
    return Rendered(
        messages={row.pk: text for row, text in zip(shown, html, strict=False)},
        sections={
            section.pk: text for section, text in zip(sections, html[len(shown) :], strict=True)
        },
    )


# The newest live messages a ``state`` carries; older ones load on request (``earlier_messages``).
LIVE_PAGE = 200


def _page_start(rows: list[Message], limit: int) -> int:
    """Where the newest page of ``rows`` starts: about ``limit`` back, moved back to a user
    message so that no turn is cut between a tool call and its result."""
    start = max(0, len(rows) - limit)
    while start > 0 and rows[start].role != Message.Role.USER:
        start -= 1
    return start


def earlier_messages(
    *, user: User, conversation_id: uuid.UUID | str, before: str, limit: int = LIVE_PAGE
) -> dict[str, Any]:
    """The page of live messages before message ``before`` (``Http404`` if unknown), how many
    earlier ones remain and which model wrote its answers: ``{"messages", "earlier",
    "models"}``."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    live = Message.objects.filter(conversation=conversation, section__isnull=True)
    anchor = live.filter(message_id=before).values_list("position", flat=True).first()
    if anchor is None:
        raise Http404("no such message")
    rows = list(live.filter(position__lt=anchor).order_by("position"))
    start = _page_start(rows, limit)
    page = rows[start:]
    html = render_state(page, [])
    return {
        "messages": [message_payload(row, html.messages.get(row.pk, "")) for row in page],
        "earlier": start,
        "models": answered_by(conversation.pk, page),
    }


def section_originals(
    *, user: User, conversation_id: uuid.UUID | str, section_id: str
) -> list[MessagePayload]:
    """The original messages one compaction folded, rendered (``Http404`` if not the user's)."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    section = Section.objects.filter(conversation=conversation, section_id=section_id).first()
    if section is None:
        raise Http404("no such section")
    rows = list(section.messages.order_by("position"))
    html = render_state(rows, [])
    return [message_payload(row, html.messages.get(row.pk, "")) for row in rows]


def _context_used(
    conversation: Conversation, sections: Sequence[Section], rows: Sequence[Message]
) -> int:
    # The same estimate the agent's window budget makes: the kit's view (recaps + live tail).
    snapshot: dict[str, Any] = {
        "id": str(conversation.pk),
        "sections": [
            {"id": section.section_id, "summary": section.summary, "messages": []}
            for section in sections
        ],
        "messages": [row.to_dict() for row in rows],
    }
    return estimate_messages(KitConversation(snapshot=snapshot).view())


def context_readout(*, user: User, conversation_id: uuid.UUID | str) -> ContextPayload:
    """The context meter of one of the user's conversations: estimated tokens and window."""
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    sections = list(Section.objects.filter(conversation=conversation).order_by("position"))
    rows = list(
        Message.objects.filter(conversation=conversation, section__isnull=True).order_by("position")
    )
    return _meter(conversation, sections, rows, _effective_profile(conversation))


def _meter(
    conversation: Conversation,
    sections: Sequence[Section],
    rows: Sequence[Message],
    profile: AgentProfile | None,
) -> ContextPayload:
    """The context meter as the live run reads it: the latest call's reported prompt while no
    fold came after it (the section count then), else the estimate."""
    window = profile.context_window if profile is not None else None
    if conversation.context_tokens and conversation.context_sections == len(sections):
        return context_payload(window, conversation.context_tokens)
    return context_payload(window, estimate=_context_used(conversation, sections, rows))


def conversation_state(*, user: User, conversation_id: uuid.UUID | str) -> ConversationState:
    """The committed state of a conversation, JSON-able (first render and the ``state`` frame).

    ``denials`` maps a denied tool call's id to ``{"reason", "rule"}`` so a re-rendered tool
    card keeps its "denied" badge. ``messages`` is the newest page of the live tail;
    ``earlier`` counts the live messages before it (``earlier_messages`` pages back).
    """
    conversation = get_conversation(user=user, conversation_id=conversation_id)
    # A section's originals are counted, not loaded: compaction exists for long histories, and
    # the client fetches a section's originals when they are opened (``section_originals``).
    sections = list(
        Section.objects.filter(conversation=conversation)
        .annotate(count=Count("messages"))
        .order_by("position")
    )
    rows = list(
        Message.objects.filter(conversation=conversation, section__isnull=True).order_by("position")
    )
    profile = _effective_profile(conversation)
    start = _page_start(rows, LIVE_PAGE)
    html = render_state(rows[start:], sections)
    denials = {
        decision.tool_call_id: {"reason": decision.reason, "rule": decision.rule_label}
        for decision in AuthorityDecision.objects.filter(
            conversation=conversation, allowed=False
        ).exclude(tool_call_id="")
    }
    # Read from the tool messages' outcomes (not their text), across folded sections too.
    failures = list(
        Message.objects.filter(
            conversation=conversation, role=Message.Role.TOOL, outcome__kind="error"
        ).values_list("tool_call_id", flat=True)
    )
    latest = (
        Run.objects.filter(conversation=conversation)
        .order_by("-created", "-id")
        .values("id", "status", "stop_reason", "error")
        .first()
    )
    # A turn that failed, was stopped or interrupted stays visible, with a way to go on.
    last_run = dict(latest) if latest is not None and latest["status"] in UNFINISHED else None
    displays = {
        call_id: outcome["display"]
        for call_id, outcome in Message.objects.filter(
            conversation=conversation, role=Message.Role.TOOL, outcome__has_key="display"
        ).values_list("tool_call_id", "outcome")
        if isinstance(outcome, dict)
    }
    return {
        "conversation": {
            "id": str(conversation.pk),
            "title": conversation.title,
            "profile": (
                {"id": profile.pk, "slug": profile.slug, "name": profile.name}
                if profile is not None
                else None
            ),
            "summary": conversation.summary,
            # The active skills, in activation order (a ``skills`` frame updates them).
            "skills": list(conversation.skills or ()),
        },
        "messages": [message_payload(row, html.messages.get(row.pk, "")) for row in rows[start:]],
        "sections": [section_payload(section, [], html) for section in sections],
        "usage": usage_payload(conversation.token_usage(), conversation.cost),
        "context": _meter(conversation, sections, rows, profile),
        "denials": denials,
        "failures": failures,
        "displays": displays,
        "last_run": last_run,
        "pending": list(pending_list(conversation.pk)),
        "approvals": pending_approvals(str(conversation.pk)),
        "decisions": decided_approvals(str(conversation.pk)),
        "questions": pending_questions(str(conversation.pk)),
        "branches": branch_points(conversation.pk, rows, folded=bool(sections)),
        "earlier": start,
        "models": answered_by(conversation.pk, rows[start:]),
    }
