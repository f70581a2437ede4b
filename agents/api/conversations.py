"""``/api/conversations/``: the user's conversations, their messages, sections and runs.

Every lookup goes through the conversation services, which answer 404 for a conversation the
user does not own. Sending a message stores it durably before anything is answered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import async_to_sync
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.db.models import OuterRef, QuerySet, Subquery
from django.db.models.functions import Substr
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import exceptions, mixins, status, viewsets
from rest_framework.authentication import SessionAuthentication
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.pagination import CursorPagination
from rest_framework.parsers import MultiPartParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import services, transfer
from conversations.attachments import (
    attach_file,
    discard_attachments,
    resolve_attachments,
    resolve_documents,
)
from conversations.branches import conversation_branches
from conversations.forks import fork_conversation
from conversations.models import Conversation, Message
from conversations.pending import pending_list
from orkestrel.protocol import MAX_IMAGES, FrameError, Limits, check_image

from ..runs.service import Compacted, Queued, RunHandle
from ..runs.submissions import Repeat, read_submission
from ..runtime.skills import Activation
from . import examples
from .base import JsonErrors, deferred_json, user_id
from .dispatch import DatabaseThreadRoutes, Deferred
from .errors import Conflict
from .events import CONVERSATION_STREAM_RESPONSE, SEND_STREAM_RESPONSE
from .jsonlines import MEDIA_TYPE, JsonLinesParser, JsonLinesParserNdjson, JsonLinesRenderer
from .runs import (
    answer_stream,
    answered_body,
    conversation_events,
    settled_body,
    started_body,
)
from .serializers import (
    MESSAGE_ACCEPTED,
    MESSAGE_ANSWERED,
    PREVIEW_CHARS,
    AttachmentSerializer,
    AttachmentUploadSerializer,
    BranchChoiceSerializer,
    BranchesSerializer,
    CompactSerializer,
    ConversationSerializer,
    ConversationUpdateSerializer,
    EditSerializer,
    FoldedSerializer,
    ForkSerializer,
    MessageCreateSerializer,
    PendingSerializer,
    RunSerializer,
    SearchResultSerializer,
    SectionOriginalsSerializer,
    SectionsSerializer,
    TakenSerializer,
    TranscriptSerializer,
)
from .sse import HEARTBEAT_SECONDS, EventStreamRenderer, event_stream

__all__ = ["ConversationViewSet"]


_MESSAGE_ID = OpenApiParameter(
    "message_id", str, OpenApiParameter.PATH, description="A message id of the conversation."
)


class NewestFirst(CursorPagination):
    ordering = ("-created", "-id")


def _conversation(request: Request, pk: str) -> Conversation:
    return services.get_conversation(user=request.user, conversation_id=pk)


# The list's filters: a boolean each, both optional (the sidebar lists pinned, recent and
# archived conversations as three lists).
_LIST_FILTERS = ("pinned", "archived")


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter(
                "pinned", bool, description="Only the pinned (`true`) or unpinned (`false`) ones."
            ),
            OpenApiParameter(
                "archived",
                bool,
                description="Only the archived (`true`) or unarchived (`false`) ones.",
            ),
        ],
        responses={
            200: examples.answer(ConversationSerializer, examples.LISTED_CONVERSATION),
            **examples.refusals(examples.LIST_FILTER_INVALID),
        },
    )
)
class ConversationViewSet(
    JsonErrors,
    DatabaseThreadRoutes,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    viewsets.GenericViewSet[Conversation],
):
    """The user's conversations, newest first; a conversation's messages (sending one starts a
    run) are on the database thread."""

    database_thread = frozenset({"messages", "regenerate", "edit", "events"})

    serializer_class = ConversationSerializer
    pagination_class = NewestFirst
    # For the schema only (the id is a UUID); ``get_queryset`` is what the views use.
    queryset = Conversation.objects.none()

    def get_queryset(self) -> QuerySet[Conversation]:
        first_words = (
            Message.objects.filter(conversation=OuterRef("pk"), role=Message.Role.USER)
            .order_by("position")
            .annotate(start=Substr("content", 1, PREVIEW_CHARS))
            .values("start")[:1]
        )
        return (
            Conversation.objects.filter(owner_id=user_id(self.request))
            .select_related("profile")
            .annotate(preview=Subquery(first_words))
        )

    def get_object(self) -> Conversation:
        return _conversation(self.request, self.kwargs["pk"])

    def written_conversation(self) -> str | None:
        """The conversation a write acts on, for an API key's ``profiles`` (``ScopedKey``);
        deleting one is tidying up, not using its profile."""
        return None if self.request.method == "DELETE" else self.kwargs.get("pk")

    def filter_queryset(self, queryset: QuerySet[Conversation, Any]) -> QuerySet[Conversation, Any]:
        if self.action != "list":
            return queryset
        errors: dict[str, list[str]] = {}
        for name in _LIST_FILTERS:
            given = self.request.query_params.get(name)
            if given is None:
                continue
            value = _BOOLEANS.get(given.lower())
            if value is None:
                errors[name] = ["Use true or false."]
            else:
                queryset = queryset.filter(**{name: value})
        if errors:
            raise exceptions.ValidationError(errors)
        return queryset

    @extend_schema(
        responses={
            200: examples.answer(ConversationSerializer, examples.CONVERSATION),
            **examples.refusals(examples.NO_CONVERSATION),
        }
    )
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        conversation = self.get_object()
        return Response(self._body(conversation))

    def _body(self, conversation: Conversation) -> dict[str, Any]:
        readout = services.context_readout(user=self.request.user, conversation_id=conversation.pk)
        context = {**self.get_serializer_context(), "readouts": {conversation.pk: readout}}
        return dict(ConversationSerializer(conversation, context=context).data)

    @extend_schema(
        request=examples.body(ConversationSerializer, examples.NEW_CONVERSATION),
        responses={
            201: examples.answer(ConversationSerializer, examples.CREATED_CONVERSATION),
            **examples.refusals(examples.CONVERSATION_INVALID),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ConversationSerializer(data=request.data, context={"request": request})
        serializer.is_valid(raise_exception=True)
        conversation = services.create_conversation(
            user=request.user,
            profile=serializer.validated_data.get("profile"),
            title=serializer.validated_data.get("title", ""),
            origin=_origin(request),
        )
        return Response(self._body(conversation), status=status.HTTP_201_CREATED)

    @extend_schema(
        request=examples.body(
            ConversationUpdateSerializer,
            examples.RENAME,
            examples.CHOOSE_MODEL,
            examples.PIN,
            examples.ARCHIVE,
        ),
        responses={
            200: examples.answer(ConversationSerializer, examples.RENAMED),
            **examples.refusals(
                examples.UPDATE_INVALID, examples.UPDATE_EMPTY, examples.NO_CONVERSATION
            ),
        },
    )
    def partial_update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ConversationUpdateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        with transaction.atomic():
            # All or nothing: a refused model keeps the old title too.
            if "title" in data:
                services.rename_conversation(
                    user=request.user, conversation_id=self.kwargs["pk"], title=data["title"]
                )
            conversation = services.choose_model(
                user=request.user,
                conversation_id=self.kwargs["pk"],
                model=data.get("model"),
                thinking=data.get("thinking"),
                read_only=data.get("read_only"),
            )
            if "pinned" in data or "archived" in data:
                conversation = services.mark_conversation(
                    user=request.user,
                    conversation_id=self.kwargs["pk"],
                    pinned=data.get("pinned"),
                    archived=data.get("archived"),
                )
        return Response(self._body(conversation))

    @extend_schema(
        summary="Fork the conversation at a message",
        description=(
            "A new, independent conversation with a deep copy of this one through `message` "
            "(included): its sections before it, its messages and its workspace files. The "
            "source is left as it is; `409` while a run is going on it."
        ),
        request=examples.body(ForkSerializer, examples.FORK),
        responses={
            201: examples.answer(ConversationSerializer, examples.FORKED),
            **examples.refusals(
                examples.FORK_INVALID,
                examples.NO_CONVERSATION,
                examples.NO_FORK_MESSAGE,
                examples.FORK_BUSY,
            ),
        },
    )
    @action(detail=True, methods=["post"])
    def fork(self, request: Request, pk: str) -> Response:
        serializer = ForkSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            fork = fork_conversation(
                user=request.user,
                conversation_id=pk,
                message_id=serializer.validated_data["message"],
            )
        except LookupError:  # a ``ForkBusy`` is answered by the API's exception handler
            raise NotFound("No such message in this conversation.") from None
        return Response(self._body(fork), status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None, **examples.refusals(examples.NO_CONVERSATION)})
    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        services.delete_conversation(user=request.user, conversation_id=self.kwargs["pk"])
        return Response(status=status.HTTP_204_NO_CONTENT)

    # -- messages -----------------------------------------------------------------------------

    @extend_schema(
        methods=["GET"],
        summary="The conversation's transcript",
        description=(
            "The folded sections' summaries and the newest page of the live tail, in order. "
            "`earlier` counts the live messages before the page; pass `before=<the first "
            "message's id>` to page back."
        ),
        parameters=[OpenApiParameter("before", str, description="A message id to page back from.")],
        responses={
            (200, examples.JSON): examples.answer(
                TranscriptSerializer, examples.TRANSCRIPT, examples.EARLIER_PAGE
            ),
            **examples.refusals(examples.NO_CONVERSATION, examples.NO_MESSAGE),
        },
    )
    @extend_schema(
        methods=["POST"],
        summary="Send a message (starts a run)",
        description=(
            "Stores the user message, then starts a run. Answers `202` with the run and the "
            "stored `message` at once; with `?wait=true` when the run has settled (`200`); "
            "with `Accept: text/event-stream` the run's events stream on the same response. "
            "While a run is going (or a call waits for approval) the message is stored as "
            "pending: `202` with `pending` (every message waiting, this one last) and `run`, "
            "the going run; the message joins it at its next model request, or the run after "
            "it takes it. Then `?wait=true` answers the run that took it, settled, with the "
            "`message` it went in; an event stream follows the runs from the send to the end of "
            "that one (event ids as `GET …/events/` gives them). Slash commands: `/compact "
            "[focus]` (`200` with `compacted`), `/continue`, `/skill <name>` (`200` with "
            "`skills`: `added`, `active`), `/<template> text` (the "
            "operators' prompt template, expanded; `//text` sends `/text`). The same content "
            "and images again within 2 s of the previous message, while it is the latest, is "
            "ignored: `200` with `duplicate`, the first's `message` and `run` (or `pending`)."
        ),
        request=examples.body(
            MessageCreateSerializer,
            examples.MESSAGE,
            examples.MESSAGE_WITH_IMAGE,
            examples.COMPACT_COMMAND,
        ),
        parameters=[OpenApiParameter("wait", bool, description="Answer once the run settled.")],
        responses={
            (202, examples.JSON): examples.answer(
                MESSAGE_ACCEPTED, examples.RUN_STARTED, examples.QUEUED
            ),
            (200, examples.JSON): examples.answer(
                MESSAGE_ANSWERED,
                examples.RUN_SETTLED,
                examples.QUEUED_SETTLED,
                examples.COMPACTED,
                examples.SKILLS,
                examples.DUPLICATE,
            ),
            (200, "text/event-stream"): SEND_STREAM_RESPONSE,
            **examples.refusals(
                examples.MESSAGE_INVALID,
                examples.IMAGE_INVALID,
                examples.NO_CONVERSATION,
                examples.BUSY,
                examples.TOO_MANY_RUNS,
                examples.RUN_FAILED,
            ),
        },
    )
    @action(
        detail=True,
        methods=["get", "post"],
        renderer_classes=[JSONRenderer, EventStreamRenderer],
    )
    def messages(self, request: Request, pk: str) -> Any:
        if request.method == "GET":
            return self.as_json(self._transcript(request, pk))
        serializer = MessageCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        _truthy(request.query_params.get("wait"))  # a bad ``wait`` is refused before anything
        images = self._images(serializer.validated_data["images"])
        attachments = [str(key) for key in serializer.validated_data["attachments"]]
        content = serializer.validated_data["content"]
        if len(images) + len(attachments) > MAX_IMAGES:
            raise exceptions.ValidationError({"images": [f"At most {MAX_IMAGES} images."]})
        conversation = _conversation(request, pk)
        try:
            images = (*images, *resolve_attachments(str(conversation.pk), attachments))
        except LookupError as error:
            raise exceptions.ValidationError({"attachments": [str(error)]}) from None
        sender, documents = user_id(request), resolve_documents(str(conversation.pk), attachments)
        send = self.service.send(
            user_id=sender,
            conversation_id=str(conversation.pk),
            content=content,
            images=images,
            documents=documents,
            # Read here, in the view's own database hop: one hop fewer for each start.
            read=read_submission(sender, str(conversation.pk), content, images, documents),
        )
        # Awaited on the event loop (no thread waits for the run to start, or for a model
        # asked to fold), then answered here on the database thread; a started run's event
        # stream, which needs nothing of the database, on the loop.
        streams = isinstance(request.accepted_renderer, EventStreamRenderer) and not attachments
        return Deferred(
            self,
            send,
            lambda sent: self._sent(request, conversation, attachments, sent),
            light=lambda sent: streams and isinstance(sent, RunHandle),
        )

    def _sent(
        self,
        request: Request,
        conversation: Conversation,
        attachments: list[str],
        outcome: Callable[[], Any],
    ) -> Any:
        """The answer to a sent message, once the run service took it (``outcome`` returns
        what it did, or raises why it would not)."""
        sent = outcome()  # a refusal is answered by the API's exception handler
        if attachments:
            discard_attachments(str(conversation.pk), attachments)
        if isinstance(sent, Repeat):
            # An accidental second submit: nothing stored or run; answered with the first.
            run = started_body(request, sent.run) if sent.run is not None else None
            body: dict[str, Any] = {"duplicate": True, "message": sent.message, "run": run}
            if sent.pending is not None:
                body["pending"] = sent.pending
            return self.as_json(Response(body))
        if isinstance(sent, Compacted):
            if sent.section is None:
                raise exceptions.ValidationError({"content": ["Nothing to fold yet."]})
            return self.as_json(Response({"compacted": sent.section}))
        if isinstance(sent, Activation):
            skills = {"added": list(sent.added), "active": list(sent.active)}
            return self.as_json(Response({"skills": skills}))
        if isinstance(sent, Queued):
            return self._queued(request, str(conversation.pk), sent)
        handle = sent
        if isinstance(request.accepted_renderer, EventStreamRenderer):
            return event_stream(self.service.follow_batches(handle.id, idle=HEARTBEAT_SECONDS))
        if _truthy(request.query_params.get("wait")):
            user = user_id(request)

            async def settled() -> dict[str, Any]:
                return {**await settled_body(user, handle.id), "message": handle.message}

            return deferred_json(settled)
        body = {**started_body(request, handle.id), "message": handle.message}
        response = Response(body, status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("api-run-detail", args=[handle.id])
        return response

    def _queued(self, request: Request, conversation_id: str, sent: Queued) -> Any:
        """A message that waits behind a run: the run that will take it, or (``wait``, an
        event stream) its answer, followed across runs to the one that takes it."""
        awaited = sent.awaited
        if awaited is not None and isinstance(request.accepted_renderer, EventStreamRenderer):
            return answer_stream(conversation_id, awaited)
        if awaited is not None and _truthy(request.query_params.get("wait")):
            user = user_id(request)
            return deferred_json(lambda: answered_body(user, conversation_id, awaited))
        queued = Response(
            {"pending": sent.pending, "run": sent.run}, status=status.HTTP_202_ACCEPTED
        )
        if sent.run is not None:
            queued["Location"] = reverse("api-run-detail", args=[sent.run])
        return self.as_json(queued)

    @extend_schema(
        summary="Follow the conversation's runs (Server-Sent Events)",
        description=(
            "Every frame of the conversation's runs, in order, from the run going now (or the "
            "next to start): when a run ends, the stream goes on with the next one as it "
            "starts, and stays open (a comment line every 15 s) until the client leaves. Event "
            "ids are opaque: `Last-Event-ID` (or `after`) resumes exactly after that event, "
            "across runs (the runs after it are replayed from their start)."
        ),
        parameters=[
            OpenApiParameter(
                "Last-Event-ID",
                str,
                OpenApiParameter.HEADER,
                description="Resume after this event (an `id` this stream gave).",
            ),
            OpenApiParameter("after", str, description="The same as Last-Event-ID."),
        ],
        responses={
            (200, "text/event-stream"): CONVERSATION_STREAM_RESPONSE,
            **examples.refusals(examples.CONVERSATION_EVENT_INVALID, examples.NO_CONVERSATION),
        },
    )
    @action(detail=True, methods=["get"], renderer_classes=[EventStreamRenderer, JSONRenderer])
    def events(self, request: Request, pk: str) -> Any:
        conversation = _conversation(request, pk)
        return conversation_events(request, str(conversation.pk))

    # -- alternatives: regenerated answers, edited messages ------------------------------------

    @extend_schema(
        summary="Answer a turn again (a new alternative)",
        description=(
            "Starts a new run answering the turn of `message_id` (its user message, or any "
            "message of its answer) again, as a new alternative of that answer; the earlier one "
            "stays stored and reachable (`GET …/branches/`, `POST …/branches/` to choose it). "
            "The model sees the chosen branch only. Answers `202` with the run. Only turns of the "
            "live tail (not folded into a section) can be redone; `409` while a run is going."
        ),
        request=None,
        parameters=[_MESSAGE_ID],
        responses={
            202: examples.answer(RunSerializer, examples.REGENERATED),
            **examples.refusals(
                examples.NO_CONVERSATION,
                examples.NO_BRANCH_MESSAGE,
                examples.NOT_BRANCHABLE,
                examples.BUSY,
                examples.TOO_MANY_RUNS,
                examples.RUN_FAILED,
            ),
        },
    )
    @action(detail=True, methods=["post"], url_path=r"messages/(?P<message_id>[^/]+)/regenerate")
    def regenerate(self, request: Request, pk: str, message_id: str) -> Any:
        conversation = _conversation(request, pk)
        work = self.service.regenerate(
            user_id=user_id(request), conversation_id=str(conversation.pk), message=message_id
        )
        return Deferred(self, work, lambda outcome: self._redone(request, outcome))

    @extend_schema(
        summary="Edit a user message and send it again (a new alternative)",
        description=(
            "Stores `content` as a new user message in place of `message_id` (its images "
            "stay) and starts a run answering it: a new alternative from that message. The "
            "old message and everything after it stay stored and reachable as the other "
            "alternative. Answers `202` with the run; `409` while a run is going."
        ),
        request=examples.body(EditSerializer, examples.REWORDED),
        parameters=[_MESSAGE_ID],
        responses={
            202: examples.answer(RunSerializer, examples.EDITED_RUN),
            **examples.refusals(
                examples.REWORDED_INVALID,
                examples.NO_CONVERSATION,
                examples.NO_BRANCH_MESSAGE,
                examples.NOT_EDITABLE,
                examples.BUSY,
                examples.TOO_MANY_RUNS,
                examples.RUN_FAILED,
            ),
        },
    )
    @action(detail=True, methods=["post"], url_path=r"messages/(?P<message_id>[^/]+)/edit")
    def edit(self, request: Request, pk: str, message_id: str) -> Any:
        serializer = EditSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        conversation = _conversation(request, pk)
        work = self.service.edit(
            user_id=user_id(request),
            conversation_id=str(conversation.pk),
            message=message_id,
            content=serializer.validated_data["content"],
        )
        return Deferred(self, work, lambda outcome: self._redone(request, outcome))

    def _redone(self, request: Request, outcome: Callable[[], Any]) -> Response:
        """The answer to a regenerate or an edit, once the run service started its run."""
        handle = outcome()  # a refusal is answered by the API's exception handler
        response = Response(started_body(request, handle.id), status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("api-run-detail", args=[handle.id])
        return response

    @extend_schema(
        methods=["GET"],
        summary="The branch points of the live tail",
        description=(
            "Where a regenerated answer or an edited message left alternatives: after which "
            "message (`point`), which one is chosen (`index`) of how many (`count`), and the "
            "chosen one's first message."
        ),
        responses={
            200: examples.answer(BranchesSerializer, examples.BRANCHES),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @extend_schema(
        methods=["POST"],
        summary="Choose an alternative at a branch point",
        description=(
            "Chooses alternative `index` after the message `point`, durably: the chat shows it, "
            "a reload keeps it, and the next message continues from it (the model sees the "
            "chosen branch only). Answers the branch points now; `409` while a run is going."
        ),
        request=examples.body(BranchChoiceSerializer, examples.CHOOSE_BRANCH),
        responses={
            200: examples.answer(BranchesSerializer, examples.BRANCH_CHOSEN),
            **examples.refusals(
                examples.BRANCH_CHOICE_INVALID,
                examples.NO_CONVERSATION,
                examples.NO_BRANCH,
                examples.BUSY,
            ),
        },
    )
    @action(detail=True, methods=["get", "post"])
    def branches(self, request: Request, pk: str) -> Response:
        conversation = _conversation(request, pk)
        if request.method == "GET":
            return Response({"branches": conversation_branches(conversation.pk)})
        serializer = BranchChoiceSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        branches = async_to_sync(self.service.select_branch)(
            user_id=user_id(request),
            conversation_id=str(conversation.pk),
            point=serializer.validated_data["point"],
            index=serializer.validated_data["index"],
        )
        return Response({"branches": branches})

    @extend_schema(
        methods=["GET"],
        summary="The messages waiting for the next run",
        description=(
            "Messages sent while a run was going: the next run takes them all, merged into one "
            "user message, in the order they were sent."
        ),
        responses={
            200: examples.answer(PendingSerializer, examples.PENDING_LIST),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @extend_schema(
        methods=["DELETE"],
        summary="Take the pending messages back",
        description=(
            "Removes them and answers their texts, oldest first (to edit and resend), and their "
            "images as `attachments` waiting on the conversation again (`id`, `mime`, `size`, "
            "and `message`: the index in `taken` of the text it came with): a next message "
            "names them in its `attachments`."
        ),
        responses={
            200: examples.answer(TakenSerializer, examples.TAKEN),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @action(detail=True, methods=["get", "delete"])
    def pending(self, request: Request, pk: str) -> Response:
        conversation = _conversation(request, pk)
        if request.method == "DELETE":
            taken = async_to_sync(self.service.pop_pending)(
                user_id=user_id(request), conversation_id=str(conversation.pk)
            )
            return Response({"taken": taken.texts, "attachments": taken.attachments})
        return Response({"pending": pending_list(conversation.pk)})

    def _transcript(self, request: Request, pk: str) -> Response:
        before = request.query_params.get("before")
        if before:
            page = services.earlier_messages(user=request.user, conversation_id=pk, before=before)
            return Response({"sections": [], **page})
        state = services.conversation_state(user=request.user, conversation_id=pk)
        return Response(
            {
                "sections": state["sections"],
                "messages": state["messages"],
                "earlier": state["earlier"],
                "models": state["models"],
            }
        )

    @staticmethod
    def _images(images: list[str]) -> tuple[str, ...]:
        limits = Limits.from_settings()
        checked = []
        for index, image in enumerate(images):
            try:
                checked.append(check_image(image, index, limits.max_image_bytes))
            except FrameError as error:
                raise exceptions.ValidationError({"images": [str(error)]}) from None
        return tuple(checked)

    @extend_schema(
        summary="Attach an image or a document to the next message",
        description=(
            "Multipart upload (field `file`): a PNG, JPEG, GIF or WebP image within "
            "`ORKESTREL_MAX_IMAGE_BYTES`, or a PDF, DOCX, plain text, Markdown or CSV document "
            "within `ORKESTREL_MAX_DOCUMENT_BYTES` (a PDF within `ORKESTREL_MAX_DOCUMENT_PAGES` "
            "pages; its text is extracted now). A document's answer adds `name`, `pages` and "
            "`preview`. Send its `id` in a message's `attachments`."
        ),
        request={"multipart/form-data": examples.body(AttachmentUploadSerializer, examples.ATTACH)},
        responses={
            201: examples.answer(AttachmentSerializer, examples.ATTACHED),
            400: examples.ATTACH_REFUSED,
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @action(detail=True, methods=["post"], parser_classes=[MultiPartParser])
    def attachments(self, request: Request, pk: str) -> Response:
        upload = request.FILES.get("file")
        if not isinstance(upload, UploadedFile):
            raise exceptions.ValidationError({"file": ["Choose an image or document to attach."]})
        info = attach_file(user=request.user, conversation_id=pk, upload=upload)
        return Response(info, status=status.HTTP_201_CREATED)

    # -- sections, compaction, search ---------------------------------------------------------

    @extend_schema(
        summary="The folded sections",
        responses={
            200: examples.answer(SectionsSerializer, examples.SECTIONS),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @action(detail=True, methods=["get"])
    def sections(self, request: Request, pk: str) -> Response:
        state = services.conversation_state(user=request.user, conversation_id=pk)
        return Response({"sections": state["sections"]})

    @extend_schema(
        responses={
            200: examples.answer(SectionOriginalsSerializer, examples.ORIGINALS),
            **examples.refusals(examples.NO_CONVERSATION, examples.NO_SECTION),
        },
        summary="One section's originals",
        operation_id="conversations_section_retrieve",
    )
    @action(detail=True, methods=["get"], url_path=r"sections/(?P<section_id>[^/]+)")
    def section(self, request: Request, pk: str, section_id: str) -> Response:
        messages = services.section_originals(
            user=request.user, conversation_id=pk, section_id=section_id
        )
        return Response({"id": section_id, "messages": messages})

    @extend_schema(
        request=examples.body(CompactSerializer, examples.FOCUS),
        responses={
            200: examples.answer(FoldedSerializer, examples.FOLDED),
            **examples.refusals(
                examples.FOCUS_INVALID,
                examples.NO_CONVERSATION,
                examples.BUSY,
                examples.NOTHING_TO_FOLD,
            ),
        },
        summary="Fold older history into a summarized section now",
    )
    @action(detail=True, methods=["post"])
    def compact(self, request: Request, pk: str) -> Response:
        serializer = CompactSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        conversation = _conversation(request, pk)
        section = async_to_sync(self.service.compact)(
            user_id=user_id(request),
            conversation_id=str(conversation.pk),
            focus=serializer.validated_data.get("focus") or None,
        )
        if section is None:
            raise Conflict("Nothing to fold yet.", code="nothing_to_compact")
        return Response({"section": section})

    @extend_schema(
        summary="Export the conversation as JSON Lines",
        description=(
            "One record per line: the conversation, each section followed by its original "
            "messages, then the live messages (ids, roles, content, tool calls and results)."
        ),
        responses={
            (200, MEDIA_TYPE): examples.answer(OpenApiTypes.STR, examples.EXPORT),
            # ``?format=json`` (or ``Accept: application/json``): the same records as one array.
            (200, "application/json"): examples.answer(OpenApiTypes.ANY, examples.EXPORT_ARRAY),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    @action(detail=True, methods=["get"], renderer_classes=[JsonLinesRenderer, JSONRenderer])
    def export(self, request: Request, pk: str) -> Response:
        records = list(transfer.export_records(user=request.user, conversation_id=pk))
        response = Response(records)
        response["Content-Disposition"] = f'attachment; filename="conversation-{pk}.jsonl"'
        return response

    @extend_schema(
        summary="Import a conversation from JSON Lines (an export)",
        request={MEDIA_TYPE: examples.body(OpenApiTypes.STR, examples.EXPORT)},
        responses={
            201: examples.answer(ConversationSerializer, examples.IMPORTED),
            **examples.refusals(examples.IMPORT_INVALID),
        },
        operation_id="conversations_import",
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        parser_classes=[JsonLinesParser, JsonLinesParserNdjson],
    )
    def import_records(self, request: Request) -> Response:
        lines = request.data if isinstance(request.data, list) else []
        conversation = transfer.import_records(user=request.user, lines=lines)
        return Response(self._body(conversation), status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("q", str, required=True, description="Text to look for.")],
        summary="Search the user's conversations (titles and messages)",
        description=(
            "Newest first, archived ones included. Each carries `snippet`: HTML of its first "
            "matching message around the match (escaped, each match in `<mark>`), or `null` "
            "when only the title matches."
        ),
        responses={
            200: examples.answer(SearchResultSerializer(many=True), examples.FOUND),
            **examples.refusals(examples.SEARCH_INVALID),
        },
    )
    @action(detail=False, methods=["get"])
    def search(self, request: Request) -> Response:
        query = request.query_params.get("q", "").strip()
        if not query:
            raise exceptions.ValidationError({"q": ["Enter text to search for."]})
        matches = services.list_conversations(user=request.user, query=query)
        page = self.paginate_queryset(matches)
        context = {**self.get_serializer_context(), "query": query}
        serializer = SearchResultSerializer(page, many=True, context=context)
        return self.get_paginated_response(serializer.data)


_BOOLEANS = {"true": True, "1": True, "false": False, "0": False}


def _origin(request: Request) -> str:
    """Where a conversation created here began: the chat page (signed in by its session, as
    the sidebar's **New chat** is) or a program (an API key)."""
    if isinstance(request.successful_authenticator, SessionAuthentication):
        return Conversation.Origin.CHAT
    return Conversation.Origin.API


_TRUE, _FALSE = ("1", "true", "yes"), ("", "0", "false", "no")


def _truthy(value: str | None) -> bool:
    """A boolean query parameter (``?wait=true``); any other word is a ``400`` naming it, as
    the schema types it."""
    word = (value or "").lower()
    if word not in _TRUE + _FALSE:
        raise exceptions.ValidationError({"wait": ["Must be true or false."]})
    return word in _TRUE
