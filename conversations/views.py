"""Pages of the chat UI: the conversation list and the chat view (thin: services do the work)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_GET, require_POST

from agents.models import PromptTemplate
from orkestrel.core import THINKING_LEVELS
from orkestrel.document_reader import max_document_bytes, max_document_pages
from workspaces.services import MAX_TEXT_BYTES, max_image_bytes

from .files import list_files
from .forms import NewConversationForm, RenameConversationForm, SearchForm
from .services import (
    conversation_state,
    create_conversation,
    delete_conversation,
    earlier_messages,
    get_conversation,
    list_conversations,
    model_choices,
    rename_conversation,
    section_originals,
)

__all__ = [
    "conversation_chat",
    "conversation_create",
    "conversation_delete",
    "conversation_list",
    "conversation_messages",
    "conversation_rename",
    "conversation_section",
]

PAGE_SIZE = 50


def _list_page(
    request: HttpRequest, new_form: NewConversationForm, status: int = 200
) -> HttpResponse:
    search = SearchForm(request.GET)
    query = search.cleaned_data["q"] if search.is_valid() else ""
    page = Paginator(list_conversations(user=request.user, query=query), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    context = {"new_form": new_form, "search": search, "query": query, "page": page}
    return render(request, "conversations/list.html", context, status=status)


@login_required
@require_GET
def conversation_list(request: HttpRequest) -> HttpResponse:
    """The user's conversations, newest first, with search and a "new conversation" form."""
    return _list_page(request, NewConversationForm(user=request.user))


@login_required
@require_POST
def conversation_create(request: HttpRequest) -> HttpResponse:
    """Start a conversation and open it."""
    form = NewConversationForm(request.POST, user=request.user)
    if form.is_valid():
        try:
            conversation = create_conversation(
                user=request.user,
                profile=form.cleaned_data["profile"],
                title=form.cleaned_data["title"],
            )
        except ValidationError as exc:
            form.add_error(None, exc)
        else:
            return redirect("conversations:chat", conversation_id=conversation.pk)
    return _list_page(request, form, status=400)


def _back(request: HttpRequest) -> HttpResponseRedirect:
    target = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        target = reverse("conversations:list")
    return HttpResponseRedirect(target)


@login_required
@require_POST
def conversation_rename(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """Rename a conversation, then go back where the form was."""
    get_conversation(user=request.user, conversation_id=conversation_id)  # 404 before anything
    form = RenameConversationForm(request.POST)
    try:
        if not form.is_valid():
            raise ValidationError(list(form.errors.get("title") or ["Enter a title."]))
        rename_conversation(
            user=request.user, conversation_id=conversation_id, title=form.cleaned_data["title"]
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, "Conversation renamed.")
    return _back(request)


@login_required
@require_POST
def conversation_delete(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """Delete a conversation (the form asks for confirmation first)."""
    delete_conversation(user=request.user, conversation_id=conversation_id)
    messages.success(request, "Conversation deleted.")
    return redirect("conversations:list")


@login_required
@require_GET
def conversation_chat(request: HttpRequest, conversation_id: uuid.UUID) -> HttpResponse:
    """The chat view: the page and the conversation's state, which ``chat.js`` renders (the
    one transcript renderer, as it renders the socket's ``state`` frame and live frames)."""
    conversation = get_conversation(user=request.user, conversation_id=conversation_id)
    state = conversation_state(user=request.user, conversation_id=conversation_id)
    context = {
        "conversation": conversation,
        "state": state,
        "files": list_files(user=request.user, conversation_id=conversation_id),
        "rename_form": RenameConversationForm(initial={"title": conversation.title}),
        "max_text_bytes": MAX_TEXT_BYTES,
        "max_image_bytes": max_image_bytes(),
        "max_document_bytes": max_document_bytes(),
        "max_document_pages": max_document_pages(),
        "max_message_chars": getattr(settings, "ORKESTREL", {}).get("MAX_MESSAGE_CHARS", 100_000),
        "model_choices": model_choices(request.user.pk),
        "thinking_levels": THINKING_LEVELS,
        # The composer suggests them as the user types ``/``.
        "prompt_templates": PromptTemplate.objects.suggestions(),
    }
    return render(request, "conversations/chat.html", context)


@login_required
@require_GET
def conversation_section(
    request: HttpRequest, conversation_id: uuid.UUID, section_id: str
) -> JsonResponse:
    """The original messages of one compaction section, fetched when the user opens them."""
    messages = section_originals(
        user=request.user, conversation_id=conversation_id, section_id=section_id
    )
    return JsonResponse({"messages": messages})


@login_required
@require_GET
def conversation_messages(request: HttpRequest, conversation_id: uuid.UUID) -> JsonResponse:
    """The page of live messages before ``?before=<message id>`` ("show earlier messages")."""
    before = request.GET.get("before", "")
    if not before:
        return JsonResponse({"error": "before: a message id is required"}, status=400)
    page = earlier_messages(user=request.user, conversation_id=conversation_id, before=before)
    return JsonResponse(page)
