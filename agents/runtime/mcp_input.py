"""The input bridge: an MCP server's requests for the user's input, waiting in memory for the
user's answer while the tool call that caused them waits too.

One bridge per run (``ChatSession.inputs``), given to each of the run's MCP connections, which
call ``ask`` when a server asks (elicitation: an ``elicitation/create`` request mid-call on the
older revisions, an input-required result on 2026-07-28). The request is shown to every
follower of the conversation (``input`` frames, through the run that ``attach``ed itself), and
``ask`` returns the user's answer (``respond``, from a front door through
``agents.runs.inputs``): ``accept`` with a form's values, checked against the form first
(``input_forms``: a wrong one is refused to the user, never forwarded), ``decline`` or
``cancel``. Nobody answering within ``ORKESTREL["MCP_INPUT_SECONDS"]`` (300) is a ``cancel``;
so is the run ending or being stopped first (``close``, or the call's cancellation).

Nothing is stored: a request lives as long as its call. A conversation's run waits even when
no tab follows it now (anyone may open the conversation, or answer through the API, within the
timeout); a run that was never attached to a conversation's followers, and a job, have nobody
to ask: their servers hear ``decline`` at once (``DECLINE``).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol

import mcp_types as types
from django.conf import settings

from orkestrel.protocol import (
    InputAction,
    InputFieldPayload,
    InputRequestPayload,
    InputSettledPayload,
)
from orkestrel.refusals import Refusal

from ..mcp.input_forms import AnswerInvalid, FormUnsupported, checked_answer, form_fields

__all__ = [
    "DECLINE",
    "DEFAULT_INPUT_SECONDS",
    "InputAsking",
    "InputBridge",
    "InputInvalid",
    "NoSuchInput",
    "input_seconds",
]

logger = logging.getLogger(__name__)

# Five minutes: a person at the chat answers a short form well within it, and a 2026-07-28
# server's request state lives longer (the SDK's default is ten).
DEFAULT_INPUT_SECONDS = 300.0
MAX_MESSAGE = 4_000
MAX_URL = 2_000

Announce = Callable[[list[InputRequestPayload], InputSettledPayload | None], None]


class NoSuchInput(LookupError, Refusal):
    """No request for input of that id waits (answered, timed out, withdrawn, or never one of
    this user's)."""

    code = "not_found"
    status_code = 404


class InputInvalid(ValueError, Refusal):
    """An answer that does not fit the server's form: nothing reached the server, the request
    still waits."""

    code = "invalid_input"
    field = "content"


class InputAsking(Protocol):
    """What answers a run's (or a job's) servers when they ask for input."""

    @property
    def timeout(self) -> float:
        """Seconds one request may wait for the person, at most."""
        ...

    async def ask(
        self, server: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The answer to the server ``server``'s request ``params``."""
        ...


def input_seconds() -> float:
    """Seconds a request waits for an answer (``ORKESTREL["MCP_INPUT_SECONDS"]``)."""
    config = getattr(settings, "ORKESTREL", {})
    return float(config.get("MCP_INPUT_SECONDS", DEFAULT_INPUT_SECONDS))


class _Declining:
    """Nobody to ask (a job): every request is declined at once."""

    timeout = 0.0

    async def ask(
        self, server: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        logger.info("MCP server %r asked for input with nobody to ask: declined", server)
        return types.ElicitResult(action="decline")


DECLINE: InputAsking = _Declining()


@dataclass(slots=True)
class _Waiting:
    payload: InputRequestPayload
    answer: asyncio.Future[types.ElicitResult]


class InputBridge:
    """The requests for input of one run's servers that wait for the conversation's user."""

    def __init__(self, conversation_id: str, user_id: int, *, timeout: float) -> None:
        self.conversation_id = conversation_id
        self.user_id = user_id
        self.timeout = timeout
        self.run_id: int | None = None
        self.closed = False
        self._announce: Announce | None = None
        self._waiting: dict[str, _Waiting] = {}

    def attach(self, run_id: int, announce: Announce) -> None:
        """The run ``run_id`` shows its requests to its followers through ``announce``
        (the requests waiting now, and the one just settled)."""
        self.run_id, self._announce = run_id, announce

    def waiting(self) -> list[InputRequestPayload]:
        """The requests that wait now, oldest first."""
        return [waiting.payload for waiting in self._waiting.values()]

    async def ask(
        self, server: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """Show the request to the user and wait for their answer (a ``cancel`` once the
        timeout passed); a request the chat cannot show is refused to the server."""
        if self._announce is None or self.run_id is None or self.closed:
            return types.ElicitResult(action="decline")
        try:
            payload = self._payload(server, params)
        except FormUnsupported as error:
            logger.warning("MCP server %r asked for input in a form not allowed: %s", server, error)
            return types.ErrorData(code=types.INVALID_PARAMS, message=str(error))
        waiting = _Waiting(payload, asyncio.get_running_loop().create_future())
        self._waiting[payload["id"]] = waiting
        self._announce(self.waiting(), None)
        try:
            async with asyncio.timeout(self.timeout):
                return await asyncio.shield(waiting.answer)
        except TimeoutError:
            self._settle(payload["id"], "cancel", None, "timeout")
        except asyncio.CancelledError:
            # The call was cancelled (the run stopped, its time ran out): nobody waits.
            self._settle(payload["id"], "cancel", None, "run")
            raise
        return waiting.answer.result()

    def respond(
        self,
        request_id: str,
        *,
        user_id: int,
        action: InputAction,
        content: dict[str, Any] | None = None,
    ) -> InputSettledPayload:
        """The user's answer to a request: ``accept`` (a form's ``content``), ``decline`` or
        ``cancel``; ``NoSuchInput`` when none of that id waits for this user, ``InputInvalid``
        when the content does not fit the form (the request still waits)."""
        waiting = self._waiting.get(request_id)
        if waiting is None or user_id != self.user_id:
            raise NoSuchInput(f"no request for input {request_id!r} waits for an answer")
        values: dict[str, Any] | None = None
        payload = waiting.payload
        if action == "accept" and payload["mode"] == "form":
            try:
                values = checked_answer(payload["fields"], content)
            except AnswerInvalid as error:
                raise InputInvalid(str(error)) from None
        settled = self._settle(request_id, action, values, "user")
        assert settled is not None  # it was waiting, on this loop, a moment ago
        return settled

    def close(self, *_: object) -> None:
        """The run ended: every request still waiting is cancelled (a listener's shape)."""
        self.closed = True
        for request_id in list(self._waiting):
            self._settle(request_id, "cancel", None, "run")

    def _settle(
        self,
        request_id: str,
        action: InputAction,
        content: dict[str, Any] | None,
        by: Literal["user", "timeout", "run"],
    ) -> InputSettledPayload | None:
        waiting = self._waiting.pop(request_id, None)
        if waiting is None:
            return None
        if not waiting.answer.done():
            waiting.answer.set_result(types.ElicitResult(action=action, content=content))
        settled: InputSettledPayload = {"id": request_id, "action": action, "by": by}
        if self._announce is not None:
            self._announce(self.waiting(), settled)
        return settled

    def _payload(self, server: str, params: types.ElicitRequestParams) -> InputRequestPayload:
        assert self.run_id is not None
        fields: list[InputFieldPayload] = []
        url: str | None = None
        if isinstance(params, types.ElicitRequestURLParams):
            url = params.url
            # Shown as a link: only the web's own schemes, never ``javascript:``.
            if not url.lower().startswith(("https://", "http://")) or len(url) > MAX_URL:
                raise FormUnsupported("the URL to open must be an http(s) URL")
        else:
            fields = form_fields(params.requested_schema)
        now = datetime.now(UTC)
        return {
            "id": uuid.uuid4().hex,
            "run": self.run_id,
            "conversation": self.conversation_id,
            "server": server,
            "mode": "url" if url is not None else "form",
            "message": params.message[:MAX_MESSAGE],
            "fields": fields,
            "url": url,
            "created": now.isoformat(),
            "expires": (now + timedelta(seconds=self.timeout)).isoformat(),
        }
