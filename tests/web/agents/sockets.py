"""A chat socket for the tests: connected as a user to a conversation, read frame by frame."""

from __future__ import annotations

from typing import Any

from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents.routing import websocket_urlpatterns

ORIGIN = [(b"origin", b"http://testserver")]


async def connect(user: Any, conversation: Any) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    """A socket on ``conversation`` signed in as ``user``, and the ``state`` frame it got."""
    socket = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.id}/", headers=ORIGIN
    )
    socket.scope["user"] = user
    connected, code = await socket.connect()
    assert connected, code
    return socket, await socket.receive_json_from(timeout=5)


async def until(socket: WebsocketCommunicator, kind: str, **match: Any) -> list[dict[str, Any]]:
    """Every frame up to and including the first of ``kind`` (whose fields match ``match``)."""
    frames = []
    while True:
        frame = await socket.receive_json_from(timeout=5)
        frames.append(frame)
        if frame["type"] == kind and all(frame.get(k) == v for k, v in match.items()):
            return frames
