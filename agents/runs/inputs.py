"""Answering an MCP server's request for the user's input: the front doors' one seam.

The run's side is ``agents.runtime.mcp_input`` (the request waits in memory, in the process
running the run); this is where the chat's ``respond`` frame and
``POST /api/runs/{id}/input/{request_id}/`` meet it. An answer reaching a process that does not
hold the run goes to the one that does through the channel layer (a ``run.respond`` request to
the conversation's join group, which the owner's relay answers with ``answered_here``), and its
outcome comes back the same way: every tab learns of it from the run's ``input`` frame.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from channels.layers import get_channel_layer

from orkestrel.protocol import InputAction, InputSettledPayload
from orkestrel.refusals import Refusal

from ..runtime.mcp_input import InputInvalid, NoSuchInput
from .active import ActiveRun
from .groups import is_shared, join_group
from .timings import RunTimings

__all__ = ["RESPOND", "RunsHere", "answered_here", "respond"]

# The request kind on the layer (``Relay._request`` routes it to ``answered_here``).
RESPOND = "run.respond"


class RunsHere(Protocol):
    """What answering needs of the run manager: its runs, its name, how long to wait."""

    origin: str
    timings: RunTimings

    def active(self, conversation_id: str) -> ActiveRun | None: ...


async def respond(
    manager: RunsHere,
    *,
    user_id: int,
    conversation_id: str,
    request_id: str,
    action: InputAction,
    content: dict[str, Any] | None = None,
    run_id: int | None = None,
) -> InputSettledPayload:
    """Answer the request ``request_id`` of the conversation's run (``run_id``, when known),
    here or in the process holding it. ``NoSuchInput`` when none waits for this user,
    ``InputInvalid`` when the content does not fit the form."""
    active = manager.active(conversation_id)
    if active is not None and run_id in (None, active.run_id):
        return active.session.inputs.respond(
            request_id, user_id=user_id, action=action, content=content
        )
    layer = get_channel_layer()
    if not is_shared(layer):
        raise NoSuchInput(f"no request for input {request_id!r} waits for an answer")
    reply = await layer.new_channel()
    await layer.group_send(
        join_group(conversation_id),
        {
            "type": RESPOND,
            "conversation": conversation_id,
            "origin": manager.origin,
            "reply": reply,
            "run": run_id,
            "user": user_id,
            "request": request_id,
            "action": action,
            "content": content,
        },
    )
    try:
        answer = await asyncio.wait_for(layer.receive(reply), manager.timings.join_timeout)
    except TimeoutError:
        # No process holds a run of the conversation (it ended, or it never asked).
        raise NoSuchInput(f"no request for input {request_id!r} waits for an answer") from None
    refused = answer.get("refused")
    if isinstance(refused, dict):
        kind = InputInvalid if refused.get("code") == InputInvalid.code else NoSuchInput
        raise kind(str(refused.get("message")))
    settled: InputSettledPayload = answer["settled"]
    return settled


def answered_here(active: ActiveRun, message: dict[str, Any]) -> dict[str, Any] | None:
    """The owner's answer to a ``run.respond`` from another process (``None``: it is about
    another run of the conversation, and goes unanswered)."""
    if message.get("run") not in (None, active.run_id):
        return None
    try:
        settled = active.session.inputs.respond(
            str(message.get("request")),
            user_id=int(message["user"]),
            action=message["action"],
            content=message.get("content"),
        )
    except Refusal as refusal:
        return {"type": "run.responded", "refused": {"code": refusal.code, "message": str(refusal)}}
    return {"type": "run.responded", "settled": settled}
