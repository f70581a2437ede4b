"""``/v1/responses``: OpenAI's Responses API, with the conversation stored here
(``previous_response_id`` continues it, or branches it from an earlier response; the client
sends only the new input)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from django.http import HttpRequest
from django.http.response import HttpResponseBase

from conversations.forks import ForkBusy
from conversations.responses import (
    Continuation,
    StoredResponse,
    continued_conversation,
    delete_response,
    discard_branch,
    owned_response,
    record_response,
)
from conversations.services import conversation_profile, enabled_profiles
from orkestrel.db import in_thread
from orkestrel.protocol import Limits

from ..models import AgentProfile
from ..runs import run_service
from ..runtime.approvals import APPROVAL_STOP
from ..runtime.client_tools import PENDING_CONTENT
from ..runtime.questions import QUESTION_STOP
from . import fields
from .access import Caller, authenticate
from .approvals import decide_held, held_calls, next_run
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
from .errors import OpenAIError, bad_request, model_forbidden, model_not_found, not_found
from .outcome import Outcome
from .questions import run_asks
from .responses import ResponseWriter
from .responses_request import ResponsesRequest, parse_responses_request
from .starts import start_run
from .support import RESPONSES_PARAMS, check_support

__all__ = ["create_response", "response_detail"]


def _usable(user_id: int, model: str) -> None:
    """``model`` names a profile the user may use (else ``404``, or ``403`` if closed)."""
    if not enabled_profiles(user_id).filter(slug=model).exists():
        if AgentProfile.objects.filter(slug=model, enabled=True).exists():
            raise model_forbidden(model)
        raise model_not_found(model)


def _within_key(caller: Caller, conversation_id: str) -> None:
    """The continued conversation runs on a profile the key may use (else ``404``
    ``model_not_found``, as any profile outside the key's ``profiles`` is)."""
    slug = conversation_profile(caller.user_id, conversation_id)
    if slug is not None and not caller.allows_profile(slug):
        raise model_not_found(slug)


def _continued(caller: Caller, model: str, previous: str) -> Continuation:
    user_id = caller.user_id
    _usable(user_id, model)
    found = owned_response(user_id, previous)
    if found is not None:
        _within_key(caller, str(found.conversation_id))
    try:
        return continued_conversation(user_id, previous, PENDING_CONTENT)
    except ForkBusy:
        raise OpenAIError(
            409,
            "A later response in the conversation of previous_response_id is still running; "
            "wait for it before branching.",
            param="previous_response_id",
            code="conversation_busy",
        ) from None
    except LookupError:
        raise bad_request(
            f"Previous response with id '{previous}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        ) from None


@openai_view("POST")
async def create_response(request: HttpRequest) -> HttpResponseBase:
    """Run the profile on the new input; the response whole, or as its stream of events.

    A run that pauses for a person's approval completes with ``mcp_approval_request`` items;
    ``mcp_approval_response`` input items (with ``previous_response_id``) decide them, and
    the run that goes on answers. One that waits for the user's answer to a question has no
    item to show it: ``409`` ``input_required`` names the question (``/api/questions/``
    answers it, and the run goes on in its conversation).
    """
    caller = await authenticate(request)
    asked = parse_responses_request(fields.storable(json_body(request)), Limits.from_settings())
    if asked.approvals:
        return await _decided(caller, asked)
    continuation = None
    if asked.previous is not None:
        continuation = await in_thread(_continued)(caller, asked.model, asked.previous)
    conversation_id = continuation.conversation_id if continuation else None
    try:
        await check_support(asked.model, asked.overrides, RESPONSES_PARAMS, conversation_id)
        handle = await start_run(
            caller,
            model=asked.model,
            content=asked.content,
            images=asked.images,
            documents=asked.documents,
            overrides=asked.overrides,
            history=asked.history,
            conversation_id=conversation_id,
            results=asked.results or None,
        )
    except Exception:
        if continuation is not None and continuation.branched:
            # A refused start stores nothing, a branch included.
            await in_thread(discard_branch)(continuation.conversation_id)
        raise
    # Recorded after the start: a refused start leaves no response behind.
    writer = await _record(caller, asked, handle.conversation_id, handle.id)
    return await _answer(writer, handle.id, asked.stream)


async def _decided(caller: Caller, asked: ResponsesRequest) -> HttpResponseBase:
    """Decide the calls the previous response held (``mcp_approval_response``); the run that
    goes on answers this response."""
    assert asked.previous is not None
    found = await in_thread(owned_response)(caller.user_id, asked.previous)
    if found is None:
        raise bad_request(
            f"Previous response with id '{asked.previous}' not found.",
            "previous_response_id",
            "previous_response_not_found",
        )
    await in_thread(_usable)(caller.user_id, asked.model)
    await in_thread(_within_key)(caller, str(found.conversation_id))
    await decide_held(caller, found.run_id, asked.approvals)
    run_id = await next_run(found.conversation_id, found.run_id)
    writer = await _record(caller, asked, found.conversation_id, run_id)
    return await _answer(writer, run_id, asked.stream)


async def _record(
    caller: Caller, asked: ResponsesRequest, conversation_id: str, run_id: int
) -> ResponseWriter:
    """Store the response the run ``run_id`` answers; its writer."""
    response_id = f"resp_{uuid.uuid4().hex}"
    await in_thread(record_response)(
        response_id,
        caller.user_id,
        conversation_id,
        run_id,
        asked.model,
        asked.store,
        asked.echo,
    )
    return ResponseWriter(
        response_id,
        int(time.time()),
        asked.model,
        Outcome(asked.overrides.client_names),
        asked.echo,
    )


async def _answer(writer: ResponseWriter, run_id: int, stream: bool) -> HttpResponseBase:
    """The run's answer, whole or as the response's stream of events."""
    if not stream:
        await collect(run_id, writer.outcome, writer.add)
        if writer.outcome.asking:
            raise await in_thread(run_asks)(run_id)
        if writer.outcome.paused:
            writer.hold(await in_thread(held_calls)(run_id))
        writer.closing()
        if writer.outcome.failed:
            raise UPSTREAM_FAILED
        return json_response(writer.body())
    first = FirstOutput(run_id, writer.outcome)
    await first.wait()
    if writer.outcome.failed and not first.ready:
        raise UPSTREAM_FAILED
    if writer.outcome.asking and not first.ready:
        # It asked before it said anything: the status can still say so.
        raise await in_thread(run_asks)(run_id)
    return event_stream(_events(writer, first, run_id))


async def _events(writer: ResponseWriter, first: FirstOutput, run_id: int) -> AsyncIterator[bytes]:
    # A client that goes away stops this generator, never the run.
    yield writer.opening() + writer.add(first.ready)
    async for deltas in first.rest():
        yield KEEP_ALIVE if deltas is None else writer.add(deltas)
    if writer.outcome.asking:
        # Mid-stream the status is sent already: the error event, and no completion.
        yield writer.error(await in_thread(run_asks)(run_id))
        return
    if writer.outcome.paused:
        yield writer.hold(await in_thread(held_calls)(run_id))
    yield writer.closing()


@openai_view("GET", "DELETE")
async def response_detail(request: HttpRequest, response_id: str) -> HttpResponseBase:
    """A stored response as it stands (``GET``), or forget it (``DELETE``)."""
    caller = await authenticate(request)
    missing = not_found(
        f"Response with id '{response_id}' not found.", "response_id", "response_not_found"
    )
    if request.method == "DELETE":
        if not await in_thread(delete_response)(caller.user_id, response_id):
            raise missing
        return json_response({"id": response_id, "object": "response", "deleted": True})
    found = await in_thread(owned_response)(caller.user_id, response_id)
    if found is None:
        raise missing
    return json_response(await _rebuilt(caller, found))


async def _rebuilt(caller: Caller, found: StoredResponse) -> dict[str, Any]:
    """A stored response's object, rebuilt from its run's frames."""
    writer = ResponseWriter(
        found.id,
        int(found.created.timestamp()),
        found.model,
        Outcome(frozenset(tool["name"] for tool in found.echo.get("tools", ()))),
        found.echo,
    )
    frames = await run_service.frames(found.run_id)
    record = await run_service.get(user_id=caller.user_id, run_id=found.run_id)
    if frames is None:
        # Running in another process, or ended without its frames (a crash): what is saved.
        frames = [{"type": "token", "content": record.content}] if record.content else []
        if record.status not in ("queued", "running"):
            stop = {
                "done": "done",
                APPROVAL_STOP: APPROVAL_STOP,
                QUESTION_STOP: QUESTION_STOP,
            }.get(record.status, "abort")
            frames.append({"type": "finish", "result": {"stop": stop, "usage": record.usage}})
    for frame in frames:
        writer.add(writer.outcome.feed(frame))
    if writer.outcome.paused:
        # Its approval requests, decided since or not: the output the response had.
        writer.hold(await in_thread(held_calls)(found.run_id))
    if writer.outcome.finished:
        writer.closing(record.finished.timestamp() if record.finished else None)
    return writer.body()
