"""``/api/conversations/{id}/workspace/files/``: the conversation's workspace files.

``GET files/`` lists them. ``files/{path}`` (the path may hold slashes) is one file: ``GET``
reads it (JSON, a span of lines, or its raw bytes), ``PUT`` creates or replaces it (JSON text,
or a multipart ``file``: the only operation that takes multipart), ``PATCH`` applies one edit of
the agent's workspace tool (ranged write, prepend, append, replace, move) and ``DELETE``
removes it. The conversation services own the work: another user's conversation and an
unknown file are 404s, and a rejected request changes nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse
from django.urls import path as route
from django.urls import reverse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.exceptions import NotAcceptable
from rest_framework.parsers import BaseParser, MultiPartParser
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from conversations import files

from . import examples
from .base import JsonErrors
from .errors import Conflict
from .parsers import JSONParser
from .schema import ApiSchema
from .workspace_serializers import (
    FileDetailSerializer,
    FileEditedSerializer,
    FileEditSerializer,
    FileListSerializer,
    FileReadQuerySerializer,
    FileSerializer,
    FileTextSerializer,
    FileUploadSerializer,
    parse_edit,
)

__all__ = ["FileListView", "FileSchema", "FileView", "RawRenderer", "urlpatterns"]

JSON = "application/json"


class RawRenderer(BaseRenderer):
    """Lets ``Accept: image/*`` through content negotiation; the view answers the bytes."""

    media_type = "image/*"
    format = "raw"

    def render(
        self,
        data: Any,
        accepted_media_type: str | None = None,
        renderer_context: Mapping[str, Any] | None = None,
    ) -> bytes:
        # Never reached with a body: raw reads answer an ``HttpResponse``, errors are JSON.
        return data if isinstance(data, bytes) else b""


class FileSchema(ApiSchema):
    """The file view's schema: a PATCH body is one whole operation, not a partial resource,
    so its fields stay required; ``?format=`` is DRF's, not part of this API."""

    def _get_request_for_media_type(self, serializer: Any, direction: str = "request") -> Any:
        method, self.method = self.method, "POST"
        try:
            return super()._get_request_for_media_type(serializer, direction)
        finally:
            self.method = method

    def _get_format_parameters(self) -> list[dict[str, Any]]:
        return []


PATH = OpenApiParameter(
    "path",
    str,
    OpenApiParameter.PATH,
    description="The file's path in the workspace; it may hold slashes (`notes/todo.md`).",
)


def _raw(data: bytes, content_type: str) -> HttpResponse:
    response = HttpResponse(data, content_type=content_type)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Cache-Control"] = "private, no-cache"
    return response


class FileListView(JsonErrors):
    """The files of the conversation's workspace."""

    @extend_schema(
        operation_id="workspace_files_list",
        summary="The workspace's files",
        description="In insertion order; empty while the conversation has no workspace.",
        responses={
            200: examples.answer(FileListSerializer, examples.FILES),
            **examples.refusals(examples.NO_CONVERSATION),
        },
    )
    def get(self, request: Request, conversation_id: uuid.UUID) -> Response:
        listed = files.list_files(user=request.user, conversation_id=conversation_id)
        return Response({"files": listed})


class FileView(JsonErrors):
    """One file of the conversation's workspace."""

    schema = FileSchema()

    def _method(self) -> str | None:
        # ``None`` while drf-spectacular builds its mock request.
        return getattr(self.request, "method", None)

    def get_renderers(self) -> list[BaseRenderer]:
        if self._method() == "GET":
            return [JSONRenderer(), RawRenderer()]
        return [JSONRenderer()]

    def get_parsers(self) -> list[BaseParser]:
        # Only PUT takes an upload; every other operation is JSON.
        if self._method() == "PUT":
            return [JSONParser(), MultiPartParser()]
        return [JSONParser()]

    @extend_schema(
        operation_id="workspace_file_retrieve",
        summary="Read a file",
        description=(
            "JSON: the file's description, with a text file's `text`. `start_line`/`end_line` "
            "(whole lines, both inclusive) and optionally `start_column`/`end_column` (1-based, "
            "the end exclusive, as the agent's ranges) read a span: `text` is the span and "
            "`range` the span applied, clamped to the text. `Accept: image/*` or `?raw=true` "
            "answers the bytes: an image's with its MIME type, with `raw=true` a text file's "
            "as `text/plain`."
        ),
        parameters=[PATH, FileReadQuerySerializer],
        responses={
            (200, JSON): examples.answer(
                FileDetailSerializer, examples.FILE_TEXT, examples.FILE_SPAN
            ),
            (200, "image/*"): OpenApiResponse(OpenApiTypes.BINARY, description="An image."),
            (200, "text/plain"): examples.answer(
                OpenApiTypes.STR, examples.RAW_TEXT, description="A text file."
            ),
            **examples.refusals(
                examples.RANGE_INVALID,
                examples.NO_CONVERSATION,
                examples.NO_FILE,
                examples.NOT_AN_IMAGE,
            ),
        },
    )
    def get(self, request: Request, conversation_id: uuid.UUID, path: str) -> Any:
        query = FileReadQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        wants_image = isinstance(request.accepted_renderer, RawRenderer)
        if query.validated_data["raw"] or wants_image:
            data, content_type = files.read_raw(
                user=request.user, conversation_id=conversation_id, path=path
            )
            if wants_image and not content_type.startswith("image/"):
                raise NotAcceptable(f"{path!r} is a text file; ask for JSON or `?raw=true`.")
            return _raw(data, content_type)
        span = query.validated_data["span"]
        if span is None:
            body = files.read_file(user=request.user, conversation_id=conversation_id, path=path)
        else:
            body = files.read_span(
                user=request.user, conversation_id=conversation_id, path=path, span=span
            )
        return Response(body)

    @extend_schema(
        operation_id="workspace_file_put",
        summary="Create or replace a file",
        description=(
            'JSON `{"text": ...}` writes a text file (UTF-8, at most 1 MB; a replaced text '
            "file keeps its language). A multipart `file` uploads a text file or an image "
            "(PNG, JPEG, GIF or WebP by its bytes, at most `MAX_IMAGE_BYTES`), checked as the "
            "chat's upload and stored at `path`. A conversation without a workspace gets one. "
            "Answers `201` with a `Location` when the file is new, `200` when it was replaced."
        ),
        parameters=[PATH],
        request={
            JSON: examples.body(FileTextSerializer, examples.PUT_TEXT),
            "multipart/form-data": examples.body(FileUploadSerializer, examples.PUT_UPLOAD),
        },
        responses={
            201: examples.answer(FileSerializer, examples.FILE_CREATED),
            200: examples.answer(FileSerializer, examples.FILE_REPLACED),
            **examples.refusals(examples.TEXT_INVALID, examples.NO_CONVERSATION),
        },
    )
    def put(self, request: Request, conversation_id: uuid.UUID, path: str) -> Response:
        content: Any
        if (request.content_type or "").startswith("multipart/form-data"):
            upload = FileUploadSerializer(data=request.data)
            upload.is_valid(raise_exception=True)
            content = upload.validated_data["file"]
        else:
            body = FileTextSerializer(data=request.data)
            body.is_valid(raise_exception=True)
            content = body.validated_data["text"]
        info, created = files.put_file(
            user=request.user, conversation_id=conversation_id, path=path, content=content
        )
        if not created:
            return Response(info)
        response = Response(info, status=status.HTTP_201_CREATED)
        response["Location"] = reverse(
            "api-workspace-file", kwargs={"conversation_id": conversation_id, "path": path}
        )
        return response

    @extend_schema(
        operation_id="workspace_file_patch",
        summary="Edit a file (one operation)",
        description=(
            "One operation, by `op`. `write`: replace `range` (1-based carets, the end "
            "exclusive; an empty span inserts) with `text`. `prepend` / `append`: add `text`. "
            "`replace`: replace `search` (literal, or a Python regex with `regex`; matching "
            "case unless `exact` is false; at most `limit` matches) by the literal `replace`, "
            "and answer how many were `replaced`. `move`: give the file the path `to`. Text "
            "edits apply to text files only; a file may not grow past 1 MB."
        ),
        parameters=[PATH],
        request=examples.body(
            FileEditSerializer,
            examples.EDIT_WRITE,
            examples.EDIT_APPEND,
            examples.EDIT_REPLACE,
            examples.EDIT_MOVE,
        ),
        responses={
            200: examples.answer(FileEditedSerializer, examples.EDITED, examples.REPLACED),
            **examples.refusals(
                examples.EDIT_INVALID, examples.NO_CONVERSATION, examples.NO_FILE, examples.EXISTS
            ),
        },
    )
    def patch(self, request: Request, conversation_id: uuid.UUID, path: str) -> Response:
        edit = parse_edit(request.data)
        try:
            edited = files.edit_file(
                user=request.user, conversation_id=conversation_id, path=path, edit=edit
            )
        except FileExistsError as error:
            raise Conflict(str(error), code="exists") from None
        body: dict[str, Any] = dict(edited.file)
        if edited.replaced is not None:
            body["replaced"] = edited.replaced
        return Response(body)

    @extend_schema(
        operation_id="workspace_file_delete",
        summary="Delete a file",
        parameters=[PATH],
        responses={204: None, **examples.refusals(examples.NO_CONVERSATION, examples.NO_FILE)},
    )
    def delete(self, request: Request, conversation_id: uuid.UUID, path: str) -> Response:
        files.delete_file(user=request.user, conversation_id=conversation_id, path=path)
        return Response(status=status.HTTP_204_NO_CONTENT)


urlpatterns = [
    route("files/", FileListView.as_view(), name="api-workspace-files"),
    route("files/<path:path>", FileView.as_view(), name="api-workspace-file"),
]
