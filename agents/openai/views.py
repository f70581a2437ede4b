"""``/v1/models`` and ``/v1/chat/completions``: agent profiles as OpenAI models."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase

from conversations.services import enabled_profiles
from orkestrel.db import in_thread
from orkestrel.protocol import Limits

from ..models import AgentProfile, ProviderEndpoint
from . import fields
from .access import Caller, authenticate
from .approvals import approval_required, held_calls
from .chat_request import parse_chat_request
from .completions import DONE, Completion, error_chunk
from .endpoint import (
    KEEP_ALIVE,
    UPSTREAM_FAILED,
    FirstOutput,
    collect,
    event_stream,
    json_body,
    json_response,
    openai_view,
)
from .errors import OpenAIError, not_found
from .outcome import Outcome
from .questions import run_asks
from .starts import start_run
from .support import CHAT_PARAMS, check_support

__all__ = ["chat_completions", "model_detail", "model_list"]

OWNER = "orkestrel"


def _model(profile: AgentProfile) -> dict[str, Any]:
    return {
        "id": profile.slug,
        "object": "model",
        "created": int(profile.created.timestamp()),
        "owned_by": OWNER,
    }


def _served(caller: Caller) -> list[AgentProfile]:
    """The profiles the caller may run whose endpoint is enabled (a disabled endpoint's
    models are no models at all)."""
    disabled = set(ProviderEndpoint.objects.filter(enabled=False).values_list("name", flat=True))
    return [
        profile
        for profile in enabled_profiles(caller.user_id)
        if caller.allows_profile(profile.slug) and profile.endpoint_name not in disabled
    ]


def _models(caller: Caller) -> list[dict[str, Any]]:
    return [_model(profile) for profile in _served(caller)]


def _find(caller: Caller, slug: str) -> dict[str, Any] | None:
    # Outside the key's profiles, or on a disabled endpoint: as if it did not exist.
    found = [profile for profile in _served(caller) if profile.slug == slug]
    return _model(found[0]) if found else None


@openai_view("GET")
async def model_list(request: HttpRequest) -> HttpResponseBase:
    """The agent profiles the key's user may use, as models (``id`` is the slug)."""
    caller = await authenticate(request)
    return json_response({"object": "list", "data": await in_thread(_models)(caller)})


@openai_view("GET")
async def model_detail(request: HttpRequest, model: str) -> HttpResponseBase:
    caller = await authenticate(request)
    found = await in_thread(_find)(caller, model)
    if found is None:
        raise not_found(f"The model '{model}' does not exist.", "model", "model_not_found")
    return json_response(found)


@openai_view("POST")
async def chat_completions(request: HttpRequest) -> HttpResponseBase:
    """Run the profile named by ``model`` on the request's messages; the answer whole or as
    ``chat.completion.chunk`` events. A run that pauses for a person's approval answers
    ``409`` ``approval_required``, one that waits for the user's answer to a question
    ``409`` ``input_required`` (streamed: an ``error`` event, then ``[DONE]``)."""
    caller = await authenticate(request)
    chat = parse_chat_request(fields.storable(json_body(request)), Limits.from_settings())
    await check_support(chat.model, chat.overrides, CHAT_PARAMS)
    handle = await start_run(
        caller,
        model=chat.model,
        content=chat.content,
        images=chat.images,
        documents=chat.documents,
        overrides=chat.overrides,
        history=chat.history,
    )
    completion = Completion(f"chatcmpl-run{handle.id}", int(time.time()), chat.model)
    outcome = Outcome(chat.overrides.client_names)
    if not chat.stream:
        await collect(handle.id, outcome)
        if outcome.failed:
            raise UPSTREAM_FAILED
        if outcome.paused or outcome.asking:
            raise await _paused(outcome, handle.id, handle.conversation_id)
        return json_response(completion.body(outcome))
    first = FirstOutput(handle.id, outcome)
    await first.wait()
    if outcome.failed and not first.ready:
        raise UPSTREAM_FAILED
    return event_stream(
        _chunks(completion, first, chat.include_usage, handle.id, handle.conversation_id)
    )


async def _paused(outcome: Outcome, run_id: int, conversation_id: str) -> OpenAIError:
    """The ``409`` naming the questions the run waits for (answerable in ``/api/questions/``),
    or the approvals (decidable in ``/api/approvals/``)."""
    if outcome.asking:
        return await in_thread(run_asks)(run_id)
    return approval_required(await in_thread(held_calls)(run_id), conversation_id)


async def _chunks(
    completion: Completion, first: FirstOutput, usage: bool, run_id: int, conversation_id: str
) -> AsyncIterator[bytes]:
    # A client that goes away stops this generator, never the run: it goes on to its end
    # and its whole answer is stored, as in the chat.
    outcome = first.outcome
    opening = [completion.chunk({"role": "assistant", "content": ""}, include_usage=usage)]
    opening += [completion.delta_chunk(delta, usage) for delta in first.ready]
    yield b"".join(opening)
    async for deltas in first.rest():
        if deltas is None:
            yield KEEP_ALIVE
            continue
        yield b"".join(completion.delta_chunk(delta, usage) for delta in deltas)
    if outcome.failed:
        # Mid-stream the status is sent already: the SDKs raise on an ``error`` event.
        yield error_chunk(UPSTREAM_FAILED)
        return
    if outcome.paused or outcome.asking:
        # No finish_reason: the answer is not over, it waits for a person's decision (or
        # the user's answer).
        yield error_chunk(await _paused(outcome, run_id, conversation_id)) + DONE
        return
    closing = [completion.chunk({}, finish_reason=outcome.finish_reason, include_usage=usage)]
    if usage:
        closing.append(completion.chunk(None, usage=outcome.usage, include_usage=True))
    closing.append(DONE)
    yield b"".join(closing)
