"""Models of the conversations app: conversations, their compacted sections and messages, the
runs that produced them, and the authority decisions taken during those runs.

The kit's ``ConversationSnapshot`` maps onto rows: a ``Conversation`` (the rollup ``summary``),
its ``Section``s (each summary with its retained original messages) and its ``Message``s (a
message with a ``section`` is one of that section's originals; without one it is in the live
tail). ``conversations.stores.DjangoConversationStore`` keeps them in step with the kit.

A regenerated answer or an edited user message makes ``Branch``es: the alternatives at one
point of the live tail, one of them chosen. A message of an alternative not chosen is
``hidden``; ``Message.objects`` never returns it, so the kit, the chat, search, export and
forks see the chosen branch only (``conversations.branches`` keeps the flags in step).
"""

from __future__ import annotations

import uuid
from typing import Any, get_args

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q, QuerySet

from orkestrel.core.messages import MessageRole, create_message, is_tool_call, to_outcome
from orkestrel.core.usage import TokenUsage

__all__ = [
    "Attachment",
    "AuthorityDecision",
    "Branch",
    "ToolApproval",
    "Conversation",
    "Message",
    "PendingMessage",
    "Question",
    "Response",
    "Run",
    "Section",
    "ToolFailure",
    "message_dict",
]

ID_LENGTH = 255
# Spelled out at module level: a ``Meta`` body cannot see its model's nested choices.
_ROLES = sorted(get_args(MessageRole))
_STATUSES = [
    "queued",
    "running",
    "done",
    "partial",
    "error",
    "interrupted",
    "awaiting_approval",
    "awaiting_input",
]
# Costs in USD: up to ten billion dollars, to a hundred-millionth of a cent (a token at the
# cheapest prices costs about 1e-8 dollars).
COST_DIGITS = 20
COST_PLACES = 10


def _token_usage(row: Conversation | Run) -> TokenUsage:
    return TokenUsage(
        row.usage_prompt,
        row.usage_completion,
        row.usage_total,
        row.usage_cache_read,
        row.usage_cache_write,
        row.usage_reasoning,
    )


class Conversation(models.Model):
    """A user's conversation; its ``id`` is the kit conversation id (``str(id)``)."""

    class Origin(models.TextChoices):
        CHAT = "chat", "chat"
        API = "api", "REST API"
        OPENAI = "openai", "OpenAI-compatible API"
        MCP = "mcp", "MCP server"

    id = models.UUIDField("id", primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="conversations",
        verbose_name="owner",
    )
    title = models.CharField("title", max_length=200, blank=True)
    profile = models.ForeignKey(
        "agents.AgentProfile",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
        verbose_name="agent profile",
    )
    workspace = models.ForeignKey(
        "workspaces.Workspace",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="conversations",
        verbose_name="workspace",
    )
    # Null until the first compaction: the kit tells "no rollup yet" from an empty rollup.
    summary = models.TextField(
        "summary", null=True, blank=True, help_text="The rollup over every section."
    )
    origin = models.CharField(
        "origin",
        max_length=16,
        choices=Origin.choices,
        default=Origin.CHAT,
        help_text="The front door it was started through.",
    )
    # The conversation's own choices; blank follows its profile (a later edit of the profile
    # then applies, as it does to every conversation that chose nothing).
    model = models.CharField(
        "model",
        max_length=300,
        blank=True,
        help_text="<endpoint>/<model> chosen for this conversation; blank: the profile's.",
    )
    thinking = models.CharField(
        "thinking",
        max_length=8,
        blank=True,
        help_text="Thinking level chosen for this conversation; blank: the profile's.",
    )
    read_only = models.BooleanField(
        "read-only",
        default=False,
        help_text="Only read-only (safe) tools run; a write is refused and the model is told.",
    )
    # By name, in the order they were activated: every later run adds their instructions.
    skills = models.JSONField(
        "skills",
        default=list,
        blank=True,
        help_text="The skills activated in this conversation (instructions operators offer).",
    )
    forked_from = models.ForeignKey(
        "self",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="forks",
        verbose_name="forked from",
    )
    forked_at = models.CharField(
        "forked at message",
        max_length=ID_LENGTH,
        blank=True,
        help_text="The source's message the fork was cut after (included).",
    )
    usage_prompt = models.PositiveBigIntegerField("prompt tokens", default=0)
    usage_completion = models.PositiveBigIntegerField("completion tokens", default=0)
    usage_total = models.PositiveBigIntegerField("total tokens", default=0)
    usage_cache_read = models.PositiveBigIntegerField("cache read tokens", default=0)
    usage_cache_write = models.PositiveBigIntegerField("cache write tokens", default=0)
    usage_reasoning = models.PositiveBigIntegerField("reasoning tokens", default=0)
    cost = models.DecimalField(
        "cost (USD)",
        max_digits=COST_DIGITS,
        decimal_places=COST_PLACES,
        null=True,
        blank=True,
        help_text="What the priced calls cost; empty while no call had a price.",
    )
    # The context meter: the provider's count of the latest call's prompt, and how many
    # sections the conversation had then (a later fold makes the count stale).
    context_tokens = models.PositiveBigIntegerField(
        "context tokens",
        null=True,
        blank=True,
        help_text="The prompt tokens of the latest call, as the provider reported them.",
    )
    context_sections = models.PositiveIntegerField("sections at that call", null=True, blank=True)
    # The owner's own sorting of their list: neither is activity (``updated`` keeps its time).
    pinned = models.BooleanField(
        "pinned", default=False, help_text="Kept at the top of the owner's conversation list."
    )
    archived = models.BooleanField(
        "archived",
        default=False,
        help_text="Out of the owner's conversation list, still searchable; nothing is deleted.",
    )
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "conversation"
        verbose_name_plural = "conversations"
        ordering = ["-updated"]
        indexes = [models.Index(fields=["owner", "-updated"], name="conv_owner_updated_idx")]

    def __str__(self) -> str:
        return self.title or f"Conversation {str(self.id)[:8]}"

    def token_usage(self) -> TokenUsage:
        """The conversation's cumulative usage counters."""
        return _token_usage(self)


class Section(models.Model):
    """A compacted slice of history: its summary; its originals are the messages pointing here."""

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="sections",
        verbose_name="conversation",
        db_index=False,  # the (conversation, section_id) unique index leads with it
    )
    section_id = models.CharField("section id", max_length=ID_LENGTH)
    position = models.PositiveIntegerField("position", help_text="Order among the sections.")
    summary = models.TextField("summary", blank=True)
    # A digest of the originals' ids in order: a save trusts a section whose snapshot matches
    # it without reading its messages (``stores.fingerprint``).
    fingerprint = models.CharField("fingerprint", max_length=32, blank=True, editable=False)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "section"
        verbose_name_plural = "sections"
        ordering = ["conversation_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "section_id"], name="conv_section_id_unique"
            ),
            models.CheckConstraint(condition=~Q(section_id=""), name="conv_section_id_set"),
        ]

    def __str__(self) -> str:
        return f"Section {self.position + 1} of {self.conversation_id}"


class Branch(models.Model):
    """One alternative at a branch point of the live tail: what follows the ``point`` message
    (an answer regenerated; an edited user message and what followed it).

    A point's alternatives are numbered from 1 in the order they were made, and exactly one is
    chosen (``active``). A message's ``branch`` is the innermost alternative it belongs to
    (empty: before every point). An alternative inside one that is not chosen is hidden too.
    """

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="branches",
        verbose_name="conversation",
        db_index=False,  # the (conversation, point, index) unique index leads with it
    )
    point = models.CharField(
        "branch point",
        max_length=ID_LENGTH,
        blank=True,
        help_text="The message id its alternatives follow; blank: the conversation's start.",
    )
    index = models.PositiveIntegerField("alternative", help_text="1, 2, ... in creation order.")
    active = models.BooleanField("chosen", default=True)
    run = models.ForeignKey(
        "Run",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name="run",
        help_text="The run that answered in this alternative, when known.",
    )
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "branch"
        verbose_name_plural = "branches"
        ordering = ["conversation_id", "point", "index"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "point", "index"], name="conv_branch_index_unique"
            ),
            models.UniqueConstraint(
                fields=["conversation", "point"],
                condition=Q(active=True),
                name="conv_branch_one_chosen",
            ),
        ]

    def __str__(self) -> str:
        return f"Alternative {self.index} after {self.point or 'the start'}"


class ChosenMessages(models.Manager["Message"]):
    """The messages on the chosen branch only: what every reader of a conversation sees."""

    def get_queryset(self) -> QuerySet[Message]:
        return super().get_queryset().filter(hidden=False)


class Message(models.Model):
    """One immutable message: in the live tail (``section`` null) or a section's original."""

    class Role(models.TextChoices):
        SYSTEM = "system", "system"
        USER = "user", "user"
        ASSISTANT = "assistant", "assistant"
        TOOL = "tool", "tool"

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="messages",
        verbose_name="conversation",
        db_index=False,  # every index of this table leads with it
    )
    section = models.ForeignKey(
        Section,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="messages",
        verbose_name="section",
        help_text="Empty: in the live tail. Set: an original retained by that section.",
    )
    message_id = models.CharField("message id", max_length=ID_LENGTH)
    position = models.BigIntegerField("position", help_text="Order within the conversation.")
    role = models.CharField("role", max_length=16, choices=Role.choices)
    content = models.TextField("content", blank=True)
    calls = models.JSONField("tool calls", null=True, blank=True)
    images = models.JSONField("images", null=True, blank=True, help_text="Base64 strings.")
    documents = models.JSONField(
        "documents",
        null=True,
        blank=True,
        help_text="Documents the user attached: {name, mime, data (base64), size, texts, pages}.",
    )
    # The documents' text once more, as a column search can match (the JSON escapes it).
    document_text = models.TextField("document text", blank=True, editable=False)
    tool_call_id = models.CharField("tool call id", max_length=ID_LENGTH, blank=True)
    outcome = models.JSONField(
        "outcome",
        null=True,
        blank=True,
        help_text="A tool message's outcome: {kind: value|error|denied|cancelled, reason, rule}.",
    )
    usage = models.JSONField("usage", null=True, blank=True)
    # Beside the kit's message, never in it: reasoning does not re-enter the conversation (the
    # model never reads it back); the chat shows it folded above the answer, as it streamed.
    thinking = models.TextField(
        "thinking", blank=True, help_text="The reasoning the model separated from this answer."
    )
    thinking_ms = models.PositiveIntegerField(
        "thinking time (ms)",
        null=True,
        blank=True,
        help_text="How long the reasoning streamed; empty when unknown.",
    )
    created = models.DateTimeField("created", auto_now_add=True)
    branch = models.ForeignKey(
        Branch,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="messages",
        verbose_name="branch",
        help_text="The innermost alternative it belongs to; empty: before every branch point.",
    )
    hidden = models.BooleanField(
        "hidden",
        default=False,
        help_text="On an alternative not chosen: kept, out of the conversation the model sees.",
    )

    # The first manager is the default one: every reader gets the chosen branch only; the
    # branch bookkeeping (``conversations.branches``) reads and flips ``every`` row.
    objects = ChosenMessages()
    every = models.Manager["Message"]()

    class Meta:
        verbose_name = "message"
        verbose_name_plural = "messages"
        ordering = ["conversation_id", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "message_id"], name="conv_message_id_unique"
            ),
            models.CheckConstraint(
                condition=Q(role__in=_ROLES),
                name="conv_message_role_valid",
            ),
            models.CheckConstraint(condition=~Q(message_id=""), name="conv_message_id_set"),
        ]
        indexes = [
            models.Index(
                fields=["conversation", "section", "position"], name="conv_message_section_idx"
            ),
            # The global order: ``get`` reads through it and ``set`` finds the top from it.
            models.Index(fields=["conversation", "position"], name="conv_message_order_idx"),
        ]

    def __str__(self) -> str:
        preview = self.content if len(self.content) <= 60 else self.content[:57] + "..."
        return f"{self.role}: {preview}"

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        if self.calls is not None and not (
            isinstance(self.calls, list) and all(is_tool_call(call) for call in self.calls)
        ):
            errors["calls"] = "Tool calls must be a list of {id, name, arguments} objects."
        if self.images is not None and not (
            isinstance(self.images, list) and all(isinstance(image, str) for image in self.images)
        ):
            errors["images"] = "Images must be a list of base64 strings."
        if self.documents is not None:
            try:
                create_message({"role": self.role, "documents": self.documents})
            except (TypeError, ValueError) as error:
                errors["documents"] = str(error)
        if self.outcome is not None:
            try:
                to_outcome(self.outcome)
            except TypeError as error:
                errors["outcome"] = str(error)
        section = self.section if self.section_id is not None else None
        if section is not None and section.conversation_id != self.conversation_id:
            errors["section"] = "The section belongs to another conversation."
        if errors:
            raise ValidationError(errors)

    def to_dict(self) -> dict[str, Any]:
        """The kit's JSON message dict (``message_to_dict`` shape)."""
        return message_dict(
            self.message_id,
            self.role,
            self.content,
            self.calls,
            self.images,
            self.tool_call_id,
            self.outcome,
            self.documents,
        )


def message_dict(
    id: str,
    role: str,
    content: str,
    calls: list[dict[str, Any]] | None,
    images: list[str] | None,
    tool_call_id: str,
    outcome: dict[str, Any] | None = None,
    documents: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A kit message dict from column values; absent optional fields are omitted, as the kit's."""
    data: dict[str, Any] = {"id": id, "role": role, "content": content}
    if calls is not None:
        data["calls"] = calls
    if images is not None:
        data["images"] = images
    if tool_call_id:
        data["tool_call_id"] = tool_call_id
    if outcome is not None:
        data["outcome"] = outcome
    if documents is not None:
        data["documents"] = documents
    return data


class Run(models.Model):
    """One agent run over a conversation: its lifecycle, usage and in-flight checkpoint."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        PARTIAL = "partial", "partial"
        ERROR = "error", "error"
        INTERRUPTED = "interrupted", "interrupted"
        AWAITING_APPROVAL = "awaiting_approval", "awaiting approval"
        AWAITING_INPUT = "awaiting_input", "awaiting input"

    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="runs", verbose_name="conversation"
    )
    status = models.CharField(
        "status", max_length=24, choices=Status.choices, default=Status.QUEUED
    )
    stop_reason = models.CharField("stop reason", max_length=64, blank=True)
    model = models.CharField(
        "model",
        max_length=300,
        blank=True,
        help_text="<endpoint>/<model> the run called.",
    )
    response_model = models.CharField(
        "response model",
        max_length=300,
        blank=True,
        help_text="The model the provider reported answering; blank when it reported none.",
    )
    usage_prompt = models.PositiveBigIntegerField("prompt tokens", default=0)
    usage_completion = models.PositiveBigIntegerField("completion tokens", default=0)
    usage_total = models.PositiveBigIntegerField("total tokens", default=0)
    usage_cache_read = models.PositiveBigIntegerField("cache read tokens", default=0)
    usage_cache_write = models.PositiveBigIntegerField("cache write tokens", default=0)
    usage_reasoning = models.PositiveBigIntegerField("reasoning tokens", default=0)
    cost = models.DecimalField(
        "cost (USD)",
        max_digits=COST_DIGITS,
        decimal_places=COST_PLACES,
        null=True,
        blank=True,
        help_text="What the run's calls cost; empty when its model has no price.",
    )
    content = models.TextField("content", blank=True, help_text="The answer so far (checkpoint).")
    thinking = models.TextField("thinking", blank=True)
    error = models.TextField("error", blank=True)
    events = models.JSONField(
        "events",
        default=list,
        blank=True,
        help_text="Every frame the run sent, in order, stored once it settled (for replay).",
    )
    request = models.JSONField(
        "request",
        null=True,
        blank=True,
        help_text="What the front door asked beyond the message (an OpenAI request's options).",
    )
    created = models.DateTimeField("created", auto_now_add=True)
    started = models.DateTimeField("started", null=True, blank=True)
    finished = models.DateTimeField("finished", null=True, blank=True)
    holder = models.CharField(
        "held by", max_length=64, blank=True, help_text="The server process running it."
    )
    heartbeat = models.DateTimeField(
        "heartbeat",
        null=True,
        blank=True,
        help_text="Moved every second by the process running it; a stale one means it died.",
    )

    class Meta:
        verbose_name = "run"
        verbose_name_plural = "runs"
        ordering = ["-created"]
        indexes = [models.Index(fields=["status"], name="conv_run_status_idx")]
        constraints = [
            # One run at a time per conversation, across every process: the run slot. A run
            # that waits for a person's approval (or answer) holds it too, until it goes on.
            models.UniqueConstraint(
                fields=["conversation"],
                condition=Q(
                    status__in=("queued", "running", "awaiting_approval", "awaiting_input")
                ),
                name="conv_run_one_active",
            ),
            models.CheckConstraint(
                condition=Q(status__in=_STATUSES),
                name="conv_run_status_valid",
            ),
            models.CheckConstraint(
                condition=Q(started__isnull=True)
                | Q(finished__isnull=True)
                | Q(finished__gte=models.F("started")),
                name="conv_run_finished_after_start",
            ),
        ]

    def __str__(self) -> str:
        return f"Run {self.pk} ({self.status})"

    def token_usage(self) -> TokenUsage:
        """The run's usage counters."""
        return _token_usage(self)

    @property
    def duration(self) -> float | None:
        """Seconds from start to finish, when both are known."""
        if self.started is None or self.finished is None:
            return None
        return (self.finished - self.started).total_seconds()

    def clean(self) -> None:
        super().clean()
        if self.started and self.finished and self.finished < self.started:
            raise ValidationError({"finished": "A run cannot finish before it started."})


class AuthorityDecision(models.Model):
    """The authority's verdict on one tool call, with a text snapshot of the deciding rule."""

    run = models.ForeignKey(
        Run,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="decisions",
        verbose_name="run",
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="decisions",
        verbose_name="conversation",
    )
    tool_call_id = models.CharField("tool call id", max_length=ID_LENGTH, blank=True)
    tool_name = models.CharField("tool", max_length=200)
    arguments = models.JSONField("arguments", default=dict, blank=True)
    rule = models.ForeignKey(
        "agents.AuthorityRule",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="decisions",
        verbose_name="rule",
    )
    # Kept as text: the rule may later be edited or deleted, the decision must still read.
    rule_label = models.CharField("rule", max_length=300, blank=True)
    zone = models.CharField("zone", max_length=64)
    allowed = models.BooleanField("allowed")
    reason = models.TextField("reason", blank=True)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "authority decision"
        verbose_name_plural = "authority decisions"
        ordering = ["created", "pk"]

    def __str__(self) -> str:
        verdict = "allowed" if self.allowed else "denied"
        return f"{self.tool_name} {verdict}"

    def clean(self) -> None:
        super().clean()
        run = self.run if self.run_id is not None else None
        if run is not None and run.conversation_id != self.conversation_id:
            raise ValidationError({"run": "The run belongs to another conversation."})


class ToolFailure(models.Model):
    """A tool call that failed (raised, timed out, bad arguments), for the operator's audit.

    The transcript reads a call's outcome from its tool message (``Message.outcome``); this
    row lists failures by run beside the authority decisions in the admin.
    """

    run = models.ForeignKey(
        Run,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="failures",
        verbose_name="run",
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="tool_failures",
        verbose_name="conversation",
    )
    tool_call_id = models.CharField("tool call id", max_length=ID_LENGTH)
    tool_name = models.CharField("tool", max_length=200)
    error = models.TextField("error")
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "tool failure"
        verbose_name_plural = "tool failures"
        ordering = ["created", "pk"]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "tool_call_id"], name="tool_failure_call_unique"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} failed"


class ToolApproval(models.Model):
    """A tool call an ``ask`` rule held for a person's decision, and that decision.

    The run that made the call settled as ``awaiting_approval``; once every call it held is
    decided, the next run executes the approved ones (with their edited arguments), answers
    the denied ones with their reason, and goes on.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        APPROVED = "approved", "approved"
        DENIED = "denied", "denied"
        EXPIRED = "expired", "expired"

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="approvals", verbose_name="run"
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="approvals",
        verbose_name="conversation",
    )
    tool_call_id = models.CharField("tool call id", max_length=ID_LENGTH)
    tool_name = models.CharField("tool", max_length=200)
    arguments = models.JSONField("arguments", default=dict, blank=True)
    parameters = models.JSONField(
        "parameters",
        null=True,
        blank=True,
        help_text="The tool's argument schema when it asked: edited arguments must match it.",
    )
    rule = models.ForeignKey(
        "agents.AuthorityRule",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="approvals",
        verbose_name="rule",
    )
    rule_label = models.CharField("rule", max_length=300, blank=True)
    zone = models.CharField("zone", max_length=64, blank=True)
    approver = models.CharField("approver", max_length=8, default="owner")
    status = models.CharField(
        "status", max_length=16, choices=Status.choices, default=Status.PENDING
    )
    reason = models.TextField("reason", blank=True)
    edited = models.BooleanField("arguments edited", default=False)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name="decided by",
    )
    decided = models.DateTimeField("decided", null=True, blank=True)
    # Set once the next run took the decision (executed the call or answered the denial).
    applied = models.BooleanField("applied", default=False)
    expires = models.DateTimeField("expires", null=True, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "tool approval"
        verbose_name_plural = "tool approvals"
        ordering = ["created", "pk"]
        indexes = [models.Index(fields=["status", "applied"], name="conv_approval_open_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "tool_call_id"], name="conv_approval_call_unique"
            ),
            models.CheckConstraint(
                condition=Q(status__in=("pending", "approved", "denied", "expired")),
                name="conv_approval_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tool_name} ({self.status})"


class Question(models.Model):
    """A question the model asked the user (its ``ask_user`` tool), and the answer.

    The run that asked settled as ``awaiting_input``; once the question is answered (or its
    time ran out), the next run gives the model the answer as the call's result and goes on.
    """

    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        ANSWERED = "answered", "answered"
        EXPIRED = "expired", "expired"

    run = models.ForeignKey(
        Run, on_delete=models.CASCADE, related_name="questions", verbose_name="run"
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="questions",
        verbose_name="conversation",
    )
    tool_call_id = models.CharField("tool call id", max_length=ID_LENGTH)
    text = models.TextField("question")
    choices = models.JSONField("choices", default=list, blank=True)
    free_text = models.BooleanField(
        "free text", default=True, help_text="Whether an answer outside the choices is taken."
    )
    status = models.CharField(
        "status", max_length=16, choices=Status.choices, default=Status.PENDING
    )
    answer = models.TextField("answer", blank=True)
    answered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="+",
        verbose_name="answered by",
    )
    answered = models.DateTimeField("answered", null=True, blank=True)
    # Set once the next run took the answer (gave it to the model).
    applied = models.BooleanField("applied", default=False)
    expires = models.DateTimeField("expires", null=True, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "question"
        verbose_name_plural = "questions"
        ordering = ["created", "pk"]
        indexes = [models.Index(fields=["status", "applied"], name="conv_question_open_idx")]
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "tool_call_id"], name="conv_question_call_unique"
            ),
            models.CheckConstraint(
                condition=Q(status__in=("pending", "answered", "expired")),
                name="conv_question_status_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.text[:60]} ({self.status})"


class Attachment(models.Model):
    """An image uploaded over HTTP for the next message, until a ``send`` frame takes it.

    Images travel apart from the websocket frame: a frame must stay under the server's
    message limit (1 MiB by default), and a message may carry eight images of 5 MB.
    """

    id = models.UUIDField("id", primary_key=True, default=uuid.uuid4, editable=False)
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="attachments",
        verbose_name="conversation",
    )
    data = models.TextField("data", help_text="The image or document, base64.")
    mime = models.CharField("MIME type", max_length=100)
    size = models.PositiveIntegerField("size (bytes)")
    # A document's (an image has neither): its file name, and its text page by page.
    name = models.CharField("file name", max_length=255, blank=True)
    texts = models.JSONField("text", null=True, blank=True, help_text="A document's, by page.")
    pages = models.PositiveIntegerField("pages", null=True, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "attachment"
        verbose_name_plural = "attachments"
        ordering = ["created"]

    def __str__(self) -> str:
        return f"{self.mime}, {self.size} bytes"


class Response(models.Model):
    """A run started through OpenAI's Responses API: what ``/v1/responses/{id}`` names.

    ``stored`` is the request's ``store``: an unstored response cannot be retrieved or
    continued, but its run stays on record for the operator.
    """

    id = models.CharField("id", primary_key=True, max_length=64)
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        on_delete=models.CASCADE,
        related_name="responses",
        verbose_name="owner",
    )
    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="responses",
        verbose_name="conversation",
    )
    run = models.OneToOneField(
        Run, on_delete=models.CASCADE, related_name="response", verbose_name="run"
    )
    model = models.CharField("model", max_length=200, help_text="The profile slug asked for.")
    stored = models.BooleanField("stored", default=True)
    echo = models.JSONField(
        "request fields", default=dict, blank=True, help_text="What the response object repeats."
    )
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "response"
        verbose_name_plural = "responses"
        ordering = ["-created"]
        indexes = [models.Index(fields=["owner", "-created"], name="conv_response_owner_idx")]

    def __str__(self) -> str:
        return self.id


class PendingMessage(models.Model):
    """A message sent while a run was busy: queued, durable, seen in every tab, until the next
    run takes it (merged with the others into one user message) or the user takes it back."""

    conversation = models.ForeignKey(
        Conversation,
        on_delete=models.CASCADE,
        related_name="pending_messages",
        verbose_name="conversation",
    )
    content = models.TextField("content", blank=True)
    images = models.JSONField("images", default=list, blank=True, help_text="Base64 strings.")
    documents = models.JSONField(
        "documents", default=list, blank=True, help_text="As a message's documents."
    )
    nonce = models.CharField("nonce", max_length=200, blank=True)
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "pending message"
        verbose_name_plural = "pending messages"
        ordering = ["created", "id"]

    def __str__(self) -> str:
        return self.content[:60] or "(images)"
