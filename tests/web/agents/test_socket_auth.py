"""The websocket's user comes from the session cookie, and frames go out without a session hook."""

from __future__ import annotations

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from agents.socket_auth import socket_auth_stack
from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = (b"origin", b"http://127.0.0.1:8000")
HOST = (b"host", b"127.0.0.1:8000")


def _cookie(user: Any) -> bytes:
    client = Client()
    client.force_login(user)
    name = settings.SESSION_COOKIE_NAME
    return f"{name}={client.cookies[name].value}".encode()


async def test_a_socket_with_the_session_cookie_is_its_users(user, conversation, manager) -> None:
    cookie = await sync_to_async(_cookie)(user)
    headers = [ORIGIN, HOST, (b"cookie", cookie)]
    socket = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.id}/", headers=headers
    )
    connected, _ = await socket.connect()
    assert connected
    state = await socket.receive_json_from(timeout=5)
    assert state["type"] == "state" and state["conversation"]["id"] == str(conversation.id)
    await socket.disconnect()


async def test_a_socket_without_a_session_is_closed_as_unauthenticated(
    conversation, manager
) -> None:
    socket = WebsocketCommunicator(
        application, f"/ws/conversations/{conversation.id}/", headers=[ORIGIN, HOST]
    )
    await socket.connect()
    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4401}


async def test_frames_go_out_through_the_servers_own_send(user) -> None:
    cookie = await sync_to_async(_cookie)(user)
    seen: dict[str, Any] = {}

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.update(user=scope["user"], send=send)

    async def send(message: Any) -> None:
        pass

    scope = {"type": "websocket", "path": "/", "headers": [(b"cookie", cookie)]}
    await socket_auth_stack(inner)(scope, None, send)

    assert seen["user"].pk == user.pk
    assert seen["send"] is send  # no wrapper reading the session on every frame
