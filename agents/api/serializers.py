"""Request and response bodies of the REST API (one serializer per shape)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import (
    PolymorphicProxySerializer,
    extend_schema_field,
    inline_serializer,
)
from rest_framework import serializers

from agents.models import AgentProfile
from conversations.models import Conversation
from conversations.services import search_snippet
from orkestrel.protocol import MAX_IMAGES, UsagePayload, encodable, usage_payload

from .strict import StrictJson

__all__ = [
    "AnswerModelSerializer",
    "AttachmentSerializer",
    "AttachmentUploadSerializer",
    "CompactSerializer",
    "CompactedSerializer",
    "ConversationSerializer",
    "ConversationUpdateSerializer",
    "DuplicateSerializer",
    "FoldedSerializer",
    "MESSAGE_ACCEPTED",
    "MESSAGE_ANSWERED",
    "PREVIEW_CHARS",
    "MessageCreateSerializer",
    "MessageSerializer",
    "PendingSerializer",
    "QueuedSerializer",
    "ProfileSerializer",
    "SearchResultSerializer",
    "RunSerializer",
    "SentSerializer",
    "SectionOriginalsSerializer",
    "SectionSerializer",
    "SectionsSerializer",
    "SkillsSerializer",
    "TakenSerializer",
    "TranscriptSerializer",
]


# How much of its first message names an untitled conversation in a list.
PREVIEW_CHARS = 100


class ProfileSerializer(serializers.ModelSerializer[AgentProfile]):
    """An agent profile a user may pick."""

    class Meta:
        model = AgentProfile
        fields = [
            "slug",
            "name",
            "description",
            "model",
            "limit",
            "timeout",
            "token_budget",
            "context_window",
            "thinking",
            "read_only",
            "is_default",
        ]
        read_only_fields = fields


class UsageSerializer(serializers.Serializer[Any]):
    """Token counters and cost (``UsagePayload``): cache and reasoning counts are subsets."""

    prompt = serializers.IntegerField(help_text="Input tokens, cached ones included.")
    completion = serializers.IntegerField(help_text="Output tokens, reasoning included.")
    total = serializers.IntegerField()
    cache_read = serializers.IntegerField(help_text="Input tokens read from the cache.")
    cache_write = serializers.IntegerField(help_text="Input tokens written to the cache.")
    reasoning = serializers.IntegerField(help_text="Output tokens spent reasoning.")
    cost = serializers.CharField(
        allow_null=True,
        help_text="USD, a decimal string (e.g. `0.00042`) at the prices operators set on "
        "the model's endpoint; null when the model has no price (unknown, not free).",
    )


class ContextSerializer(serializers.Serializer[Any]):
    used = serializers.IntegerField(
        help_text="The provider's count of the latest request's prompt (else an estimate)."
    )
    window = serializers.IntegerField(allow_null=True, help_text="The profile's context window.")
    approximate = serializers.BooleanField(
        help_text="`used` is an estimate: no provider count stands for the history as it is."
    )


class ForkedFromSerializer(serializers.Serializer[Any]):
    """The conversation and message a fork was cut from."""

    conversation = serializers.UUIDField()
    message = serializers.CharField()


class ConversationSerializer(StrictJson, serializers.ModelSerializer[Conversation]):
    """A conversation; ``profile`` is a profile's slug (the default profile when omitted)."""

    profile = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=AgentProfile.objects.filter(enabled=True),
        required=False,
        allow_null=True,
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    usage = serializers.SerializerMethodField()
    skills = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="The skills active in this conversation, in activation order.",
    )
    forked_from = serializers.SerializerMethodField()
    preview = serializers.SerializerMethodField()
    # DRF's metaclass pops declared fields off the class, so ``self.context`` stays the
    # serializer's context at run time; the stubs see this field shadowing ``Field.context``.
    context = serializers.SerializerMethodField()  # type: ignore[assignment]

    class Meta:
        model = Conversation
        fields = [
            "id",
            "title",
            "profile",
            "origin",
            "model",
            "thinking",
            "read_only",
            "pinned",
            "archived",
            "skills",
            "forked_from",
            "preview",
            "created",
            "updated",
            "usage",
            "context",
        ]
        read_only_fields = [
            "id",
            "origin",
            "model",
            "thinking",
            "read_only",
            "pinned",
            "archived",
            "skills",
            "forked_from",
            "preview",
            "created",
            "updated",
            "usage",
            "context",
        ]

    @extend_schema_field(
        serializers.CharField(
            allow_null=True,
            help_text=f"The start of the first user message (up to {PREVIEW_CHARS} characters) "
            "to name an untitled conversation; in lists and search results, `null` elsewhere.",
        )
    )
    def get_preview(self, conversation: Conversation) -> str | None:
        text: str | None = getattr(conversation, "preview", None)
        return " ".join((text or "").split())[:PREVIEW_CHARS] or None

    @extend_schema_field(ForkedFromSerializer(allow_null=True))
    def get_forked_from(self, conversation: Conversation) -> dict[str, str] | None:
        if conversation.forked_from_id is None:
            return None
        return {"conversation": str(conversation.forked_from_id), "message": conversation.forked_at}

    @extend_schema_field(UsageSerializer)
    def get_usage(self, conversation: Conversation) -> UsagePayload:
        return usage_payload(conversation.token_usage(), conversation.cost)

    @extend_schema_field(ContextSerializer(allow_null=True))
    def get_context(self, conversation: Conversation) -> dict[str, Any] | None:
        """The context meter; computed for one conversation, ``null`` in lists."""
        # ``super()``: the serializer's context, past the ``context`` field declared above.
        readouts: dict[Any, dict[str, Any]] = super().context.get("readouts", {})
        return readouts.get(conversation.pk)


class SearchResultSerializer(ConversationSerializer):
    """A conversation a search found, with the part of its first matching message."""

    snippet = serializers.SerializerMethodField()

    class Meta(ConversationSerializer.Meta):
        fields = [*ConversationSerializer.Meta.fields, "snippet"]
        read_only_fields = [*ConversationSerializer.Meta.read_only_fields, "snippet"]

    @extend_schema_field(
        serializers.CharField(
            allow_null=True,
            help_text="HTML: the first matching message around its first match, escaped, each "
            "match in `<mark>`, a cut marked `…`; null when only the title matches.",
        )
    )
    def get_snippet(self, conversation: Conversation) -> str | None:
        # Past both ``context`` fields declared above: the serializer's own context.
        query: str = super(ConversationSerializer, self).context.get("query", "")
        return search_snippet(getattr(conversation, "matched", None), query)


class ConversationUpdateSerializer(StrictJson, serializers.Serializer[Any]):
    """A rename, the conversation's own model and thinking level (blank: the profile's), and
    its place in the owner's list (pinned, archived)."""

    title = serializers.CharField(max_length=200, required=False)
    model = serializers.CharField(max_length=300, required=False, allow_blank=True)
    thinking = serializers.CharField(max_length=8, required=False, allow_blank=True)
    # DRF's metaclass pops declared fields off the class: this does not shadow the serializer's
    # own ``Field.read_only`` at run time, though the stubs see it so.
    read_only = serializers.BooleanField(  # type: ignore[assignment]
        required=False, help_text="Only read-only tools run; writes are refused."
    )
    pinned = serializers.BooleanField(required=False, help_text="Keep it at the top of the list.")
    archived = serializers.BooleanField(
        required=False, help_text="Take it out of the list (still searchable)."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Send a title, a model, a thinking level, read_only, pinned or archived."
            )
        return attrs


class ForkSerializer(StrictJson, serializers.Serializer[Any]):
    """Where to cut: the fork keeps the history through this message."""

    message = serializers.CharField(max_length=255)


class MessageCreateSerializer(StrictJson, serializers.Serializer[Any]):
    """A user message: text and up to eight base64 images (PNG, JPEG, GIF or WebP)."""

    content = serializers.CharField(allow_blank=True, trim_whitespace=False)
    images = serializers.ListField(
        child=serializers.CharField(), required=False, default=list, max_length=MAX_IMAGES
    )
    attachments = serializers.ListField(
        child=serializers.UUIDField(format="hex_verbose"),
        required=False,
        default=list,
        max_length=MAX_IMAGES,
        help_text="Ids of images uploaded with POST …/attachments/.",
    )

    def validate_content(self, value: str) -> str:
        if not encodable(value):
            raise serializers.ValidationError("The text holds an unpaired surrogate.")
        limit = settings.ORKESTREL["MAX_MESSAGE_CHARS"]
        if len(value) > limit:
            raise serializers.ValidationError(
                f"Ensure this field has no more than {limit} characters.", code="max_length"
            )
        return value


class EditSerializer(StrictJson, serializers.Serializer[Any]):
    """The edited text of a user message (its images stay)."""

    content = serializers.CharField(max_length=None)

    def validate_content(self, value: str) -> str:
        return MessageCreateSerializer().validate_content(value)


class BranchSerializer(serializers.Serializer[Any]):
    """A branch point of the live tail and its alternatives."""

    point = serializers.CharField(
        allow_blank=True, help_text="The message the alternatives follow (empty: the start)."
    )
    message = serializers.CharField(
        allow_null=True,
        help_text="The chosen alternative's first message (null while it holds none).",
    )
    index = serializers.IntegerField(help_text="The chosen alternative, from 1.")
    count = serializers.IntegerField(help_text="How many alternatives there are.")
    error = serializers.CharField(
        allow_blank=True, help_text="Why the chosen alternative's run failed (empty if not)."
    )


class BranchesSerializer(serializers.Serializer[Any]):
    """The branch points of the live tail, in order."""

    branches = BranchSerializer(many=True)


class BranchChoiceSerializer(StrictJson, serializers.Serializer[Any]):
    """Which alternative to choose at a branch point."""

    point = serializers.CharField(
        allow_blank=True,
        max_length=255,
        trim_whitespace=False,
        help_text="The branch point's message id (empty: the start).",
    )
    index = serializers.IntegerField(min_value=1, help_text="The alternative, from 1.")


class AttachmentSerializer(serializers.Serializer[Any]):
    """An image or document uploaded for the next message."""

    id = serializers.UUIDField()
    mime = serializers.CharField()
    size = serializers.IntegerField()
    name = serializers.CharField(required=False, help_text="A document's file name.")
    pages = serializers.IntegerField(
        required=False, allow_null=True, help_text="A PDF's page count (null otherwise)."
    )
    preview = serializers.CharField(
        required=False, help_text="A document's first page's text, shortened."
    )


class AttachmentUploadSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(
        help_text="A PNG, JPEG, GIF or WebP image, or a PDF, DOCX, plain text, Markdown or CSV "
        "document."
    )


class CompactSerializer(StrictJson, serializers.Serializer[Any]):
    focus = serializers.CharField(max_length=2000, required=False, allow_blank=True)


class RunSerializer(serializers.Serializer[Any]):
    """A run: its status, why it stopped, its usage and its answer so far (or final)."""

    id = serializers.IntegerField()
    conversation = serializers.UUIDField(source="conversation_id")
    status = serializers.ChoiceField(
        choices=[
            "queued",
            "running",
            "done",
            "partial",
            "error",
            "interrupted",
            "awaiting_approval",
            "awaiting_input",
        ]
    )
    stop_reason = serializers.CharField(
        help_text="done, abort, exhaust or interrupted (empty while running)."
    )
    error = serializers.CharField()
    content = serializers.CharField()
    thinking = serializers.CharField()
    model = serializers.CharField(
        help_text="`<endpoint>/<model>` the run called (empty for runs stored before it was "
        "recorded)."
    )
    response_model = serializers.CharField(
        help_text="The model the provider reported answering; empty when it named none."
    )
    usage = UsageSerializer()
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)


# -- transcripts: the shapes of ``orkestrel.protocol`` (``MessagePayload``, ``SectionPayload``) --


class DocumentSerializer(serializers.Serializer[Any]):
    """A document on a user message, as the transcript shows it (never its bytes)."""

    name = serializers.CharField()
    mime = serializers.CharField()
    size = serializers.IntegerField()
    pages = serializers.IntegerField(allow_null=True, help_text="A PDF's pages; null otherwise.")
    preview = serializers.CharField(
        allow_blank=True, help_text="The start of its first page's text (empty: none)."
    )


class MessageSerializer(serializers.Serializer[Any]):
    """A committed message; ``html`` is its sanitized rendering ("" where none is shown)."""

    id = serializers.CharField()
    role = serializers.CharField(help_text="user, assistant or tool.")
    content = serializers.CharField(allow_blank=True)
    html = serializers.CharField(allow_blank=True)
    calls = serializers.ListField(
        child=serializers.DictField(),
        allow_null=True,
        help_text="An assistant message's tool calls (`id`, `name`, `arguments`), or null.",
    )
    tool_call_id = serializers.CharField(allow_null=True, help_text="A tool result's call.")
    images_count = serializers.IntegerField()
    thinking = serializers.CharField(
        allow_blank=True,
        help_text="An answer's reasoning as it streamed (empty when none); never sent back "
        "to the model.",
    )
    thinking_ms = serializers.IntegerField(
        allow_null=True, help_text="How long the reasoning took, in milliseconds (null: unknown)."
    )
    documents = DocumentSerializer(
        many=True, help_text="The documents a user message carries (empty on others)."
    )


class SectionSerializer(serializers.Serializer[Any]):
    """A folded section: its summary, how many originals it holds, and (when sent) them."""

    id = serializers.CharField()
    summary = serializers.CharField(allow_blank=True)
    html = serializers.CharField(allow_blank=True)
    count = serializers.IntegerField()
    messages = MessageSerializer(many=True)


class AnswerModelSerializer(serializers.Serializer[Any]):
    """The model that wrote an answer."""

    model = serializers.CharField(help_text="`<endpoint>/<model>` as its run called it.")
    response_model = serializers.CharField(
        allow_blank=True, help_text="The model the provider reported answering; empty if none."
    )


class TranscriptSerializer(serializers.Serializer[Any]):
    """The sections' summaries and a page of the live tail, oldest first."""

    sections = SectionSerializer(many=True)
    messages = MessageSerializer(many=True)
    earlier = serializers.IntegerField(help_text="Live messages before this page.")
    models = serializers.DictField(
        child=AnswerModelSerializer(),
        required=False,
        help_text="Which model wrote each answer of the page, by message id (answers of no "
        "known run are absent).",
    )


class SectionsSerializer(serializers.Serializer[Any]):
    sections = SectionSerializer(many=True)


class SectionOriginalsSerializer(serializers.Serializer[Any]):
    """One section's original messages, as they were before the fold."""

    id = serializers.CharField()
    messages = MessageSerializer(many=True)


class PendingMessageSerializer(serializers.Serializer[Any]):
    """A message waiting for the next run."""

    id = serializers.IntegerField()
    content = serializers.CharField(allow_blank=True)
    images_count = serializers.IntegerField()
    nonce = serializers.CharField(allow_blank=True)


class PendingSerializer(serializers.Serializer[Any]):
    """The messages waiting for the next run, oldest first (it takes them all, merged)."""

    pending = PendingMessageSerializer(many=True)


class TakenSerializer(serializers.Serializer[Any]):
    taken = serializers.ListField(
        child=serializers.CharField(allow_blank=True), help_text="Their texts, oldest first."
    )


class FoldedSerializer(serializers.Serializer[Any]):
    """``POST …/compact/``: the section just folded."""

    section = SectionSerializer()


class CompactedSerializer(serializers.Serializer[Any]):
    """A ``/compact`` message: the section just folded."""

    compacted = SectionSerializer()


class SkillsSerializer(serializers.Serializer[Any]):
    """A ``/skill <name>`` message: the skills it added and those now active."""

    skills = inline_serializer(
        "SkillActivation",
        fields={
            "added": serializers.ListField(child=serializers.CharField()),
            "active": serializers.ListField(child=serializers.CharField()),
        },
    )


class DuplicateSerializer(serializers.Serializer[Any]):
    """A repeated submit, ignored: the first message, and its run (or its pending place)."""

    duplicate = serializers.BooleanField()
    message = MessageSerializer(allow_null=True)
    run = RunSerializer(allow_null=True)
    pending = PendingMessageSerializer(many=True, required=False)


# What ``POST …/messages/`` answers as JSON: a ``202`` (a run started, or the message waits for
# the next one) or a ``200`` (the settled run with ``wait=true``, or a command's outcome).
class SentSerializer(RunSerializer):
    """A sent message's run, with the user message it stored."""

    message = MessageSerializer(
        allow_null=True,
        help_text="The stored user message (its id for an edit or a regenerate); null for a "
        "continue with nothing waiting. After a queued send (`wait=true`): the message the "
        "waiting ones went in, merged.",
    )


class QueuedSerializer(PendingSerializer):
    """A message sent while a run was going: waiting, and the run that will take it."""

    run = serializers.IntegerField(
        allow_null=True,
        help_text="The run going now: the message joins it at its next model request, or the "
        "run after it takes it (`wait=true` and `Accept: text/event-stream` follow them to "
        "the one that does). Null: none was going (the next run to start takes it).",
    )


MESSAGE_ACCEPTED = PolymorphicProxySerializer(
    component_name="MessageAccepted",
    serializers=[SentSerializer, QueuedSerializer],
    resource_type_field_name=None,
)
MESSAGE_ANSWERED = PolymorphicProxySerializer(
    component_name="MessageAnswered",
    serializers=[SentSerializer, CompactedSerializer, SkillsSerializer, DuplicateSerializer],
    resource_type_field_name=None,
)
