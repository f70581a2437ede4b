"""The chat page's workspace panel: list, read and upload files (JSON for ``chat.js``).

The upload also works without JavaScript: a plain form post is answered with a redirect back
to the chat page and a flash message, a request that accepts JSON with JSON. A sent message's
images are served one by one (its thumbnails, opened full size), to its owner only.
"""

from __future__ import annotations

import base64
import binascii
import uuid

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from orkestrel.document_reader import max_document_bytes
from workspaces.services import MAX_TEXT_BYTES, image_mime, max_image_bytes

from .attachments import attach_file
from .files import list_files, read_file, read_image, upload_file
from .models import Message
from .services import get_conversation

__all__ = [
    "attachment_upload",
    "message_image",
    "workspace_file",
    "workspace_files",
    "workspace_image",
    "workspace_upload",
]

# Room for the multipart framing and the form's other fields around the file itself.
MULTIPART_OVERHEAD = 64 * 1024


def _path(request: HttpRequest) -> str:
    return request.GET.get("path", "")


@login_required
@require_GET
def workspace_files(request: HttpRequest, conversation_id: uuid.UUID) -> JsonResponse:
    """``{"files": [{path, kind, language, mime, size, lines, state}, ...]}``."""
    return JsonResponse({"files": list_files(user=request.user, conversation_id=conversation_id)})


@login_required
@require_GET
def workspace_file(request: HttpRequest, conversation_id: uuid.UUID) -> JsonResponse:
    """One file (``?path=``); a text file's JSON carries its ``text``."""
    info = read_file(user=request.user, conversation_id=conversation_id, path=_path(request))
    return JsonResponse(info)


@login_required
@require_GET
def workspace_image(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """An image file's bytes (``?path=``), for the panel's preview."""
    data, mime = read_image(user=request.user, conversation_id=conversation_id, path=_path(request))
    return _image_response(data, mime, "private, no-cache")


def _image_response(data: bytes, mime: str, cache: str) -> HttpResponse:
    """Image bytes that can only ever be shown as an image (never sniffed, never a page)."""
    response = HttpResponse(data, content_type=mime)
    response["X-Content-Type-Options"] = "nosniff"
    response["Content-Security-Policy"] = "default-src 'none'"
    response["Cache-Control"] = cache
    return response


@login_required
@require_GET
def message_image(
    request: HttpRequest, conversation_id: uuid.UUID, message_id: str, index: int
) -> HttpResponse:
    """Image ``index`` (from 0) a message was sent with; 404 for another user's conversation,
    an unknown message or index, or bytes that are not a PNG, JPEG, GIF or WebP image."""
    conversation = get_conversation(user=request.user, conversation_id=conversation_id)
    # Every alternative's messages (``every``): a message on a branch not chosen keeps its images.
    images = (
        Message.every.filter(conversation=conversation, message_id=message_id)
        .values_list("images", flat=True)
        .first()
    )
    if not isinstance(images, list) or not 0 <= index < len(images):
        raise Http404("No such image.")
    text = str(images[index])
    if text.startswith("data:"):
        text = text.partition(",")[2]  # a data URL: its base64 payload
    try:
        data = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise Http404("No such image.") from None
    mime = image_mime(data)
    if mime is None:
        raise Http404("No such image.")
    # A stored message never changes: the browser may keep its images.
    return _image_response(data, mime, "private, max-age=86400, immutable")


def _wants_json(request: HttpRequest) -> bool:
    return "application/json" in request.headers.get("accept", "")


def _too_large(refusal: ValidationError) -> bool:
    """Whether ``refusal`` is of a file over its limit (``413``, not ``400``)."""
    return any(
        error.code == "too_large" for error in getattr(refusal, "error_dict", {}).get("file", [])
    )


@login_required
@require_POST
def workspace_upload(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """Upload one text, image or document file (multipart field ``file``) into the workspace
    (a PDF or DOCX as the text file of its extracted text)."""
    # Refused on its declared length, before the body is read (a 64 MB upload was read
    # whole and then refused).
    limit = max(MAX_TEXT_BYTES, max_image_bytes(), max_document_bytes()) + MULTIPART_OVERHEAD
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > limit:
        message = f"The upload is too large (the limit is {limit} bytes)."
        if _wants_json(request):
            return JsonResponse({"error": message}, status=413)
        messages.error(request, message)
        return redirect("conversations:chat", conversation_id=conversation_id)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise ValidationError({"file": "Choose a file to upload."})
        info = upload_file(user=request.user, conversation_id=conversation_id, upload=upload)
    except ValidationError as exc:
        message = " ".join(exc.messages)
        if _wants_json(request):
            return JsonResponse({"error": message}, status=413 if _too_large(exc) else 400)
        messages.error(request, message)
    else:
        if _wants_json(request):
            return JsonResponse({"file": info}, status=201)
        messages.success(request, f"Uploaded {info['path']}.")
    return redirect("conversations:chat", conversation_id=conversation_id)


@login_required
@require_POST
def attachment_upload(request: HttpRequest, conversation_id: uuid.UUID) -> JsonResponse:
    """Upload one image or document (multipart field ``file``) for the next message:
    ``{"attachment": {id, mime, size}}`` (a document's adds ``name``, ``pages``, ``preview``);
    the ``send`` frame names it in ``attachments``."""
    largest = max(max_image_bytes(), max_document_bytes())
    declared = request.META.get("CONTENT_LENGTH") or "0"
    if declared.isdigit() and int(declared) > largest + MULTIPART_OVERHEAD:
        return JsonResponse({"error": f"The file is larger than {largest} bytes."}, status=413)
    upload = request.FILES.get("file")
    try:
        if upload is None:
            raise ValidationError({"file": "Choose an image or a document to attach."})
        info = attach_file(user=request.user, conversation_id=conversation_id, upload=upload)
    except ValidationError as exc:
        return JsonResponse(
            {"error": " ".join(exc.messages)}, status=413 if _too_large(exc) else 400
        )
    return JsonResponse({"attachment": info}, status=201)
