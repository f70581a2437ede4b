"""Request and response bodies of the REST API (one serializer per shape)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from agents.models import AgentProfile
from conversations.models import Conversation
from orkestrel.protocol import MAX_IMAGES, encodable

__all__ = [
    "AttachmentSerializer",
    "AttachmentUploadSerializer",
    "CompactSerializer",
    "ConversationSerializer",
    "ConversationUpdateSerializer",
    "MessageCreateSerializer",
    "ProfileSerializer",
    "RunSerializer",
]


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
    prompt = serializers.IntegerField()
    completion = serializers.IntegerField()
    total = serializers.IntegerField()


class ContextSerializer(serializers.Serializer[Any]):
    used = serializers.IntegerField(help_text="Estimated tokens the next request carries.")
    window = serializers.IntegerField(allow_null=True, help_text="The profile's context window.")


class ForkedFromSerializer(serializers.Serializer[Any]):
    """The conversation and message a fork was cut from."""

    conversation = serializers.UUIDField()
    message = serializers.CharField()


class ConversationSerializer(serializers.ModelSerializer[Conversation]):
    """A conversation; ``profile`` is a profile's slug (the default profile when omitted)."""

    profile = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=AgentProfile.objects.filter(enabled=True),
        required=False,
        allow_null=True,
    )
    title = serializers.CharField(max_length=200, required=False, allow_blank=True)
    usage = serializers.SerializerMethodField()
    forked_from = serializers.SerializerMethodField()
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
            "forked_from",
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
            "forked_from",
            "created",
            "updated",
            "usage",
            "context",
        ]

    @extend_schema_field(ForkedFromSerializer(allow_null=True))
    def get_forked_from(self, conversation: Conversation) -> dict[str, str] | None:
        if conversation.forked_from_id is None:
            return None
        return {"conversation": str(conversation.forked_from_id), "message": conversation.forked_at}

    @extend_schema_field(UsageSerializer)
    def get_usage(self, conversation: Conversation) -> dict[str, int]:
        return {
            "prompt": conversation.usage_prompt,
            "completion": conversation.usage_completion,
            "total": conversation.usage_total,
        }

    @extend_schema_field(ContextSerializer(allow_null=True))
    def get_context(self, conversation: Conversation) -> dict[str, Any] | None:
        """The context meter; computed for one conversation, ``null`` in lists."""
        # ``super()``: the serializer's context, past the ``context`` field declared above.
        readouts: dict[Any, dict[str, Any]] = super().context.get("readouts", {})
        return readouts.get(conversation.pk)


class ConversationUpdateSerializer(serializers.Serializer[Any]):
    """A rename, and the conversation's own model and thinking level (blank: the profile's)."""

    title = serializers.CharField(max_length=200, required=False)
    model = serializers.CharField(max_length=300, required=False, allow_blank=True)
    thinking = serializers.CharField(max_length=8, required=False, allow_blank=True)
    # DRF's metaclass pops declared fields off the class: this does not shadow the serializer's
    # own ``Field.read_only`` at run time, though the stubs see it so.
    read_only = serializers.BooleanField(  # type: ignore[assignment]
        required=False, help_text="Only read-only tools run; writes are refused."
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if not attrs:
            raise serializers.ValidationError(
                "Send a title, a model, a thinking level or read_only."
            )
        return attrs


class ForkSerializer(serializers.Serializer[Any]):
    """Where to cut: the fork keeps the history through this message."""

    message = serializers.CharField(max_length=255)


class MessageCreateSerializer(serializers.Serializer[Any]):
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


class AttachmentSerializer(serializers.Serializer[Any]):
    """An image uploaded for the next message."""

    id = serializers.UUIDField()
    mime = serializers.CharField()
    size = serializers.IntegerField()


class AttachmentUploadSerializer(serializers.Serializer[Any]):
    file = serializers.FileField(help_text="A PNG, JPEG, GIF or WebP image.")


class CompactSerializer(serializers.Serializer[Any]):
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
        ]
    )
    stop_reason = serializers.CharField(
        help_text="done, abort, exhaust or interrupted (empty while running)."
    )
    error = serializers.CharField()
    content = serializers.CharField()
    thinking = serializers.CharField()
    usage = UsageSerializer()
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
