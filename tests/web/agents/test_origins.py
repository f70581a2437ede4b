"""The websocket origin check: same scheme, host and port as the request, or trusted."""

from __future__ import annotations

import pytest
from channels.testing import WebsocketCommunicator

from orkestrel.asgi import application

pytestmark = pytest.mark.django_db(transaction=True)


async def handshake(origin: str, host: str = "127.0.0.1:8000", scheme: str = "ws") -> bool:
    communicator = WebsocketCommunicator(
        application,
        "/ws/conversations/00000000-0000-0000-0000-000000000000/",
        headers=[(b"origin", origin.encode()), (b"host", host.encode())],
    )
    communicator.scope["scheme"] = scheme
    connected, _ = await communicator.connect()
    await communicator.disconnect()
    return connected


@pytest.mark.parametrize(
    ("origin", "host", "scheme", "allowed"),
    [
        ("http://127.0.0.1:8000", "127.0.0.1:8000", "ws", True),
        ("http://127.0.0.1:9999", "127.0.0.1:8000", "ws", False),  # another port, same host
        ("https://127.0.0.1:8000", "127.0.0.1:8000", "ws", False),  # another scheme
        ("http://localhost:8000", "127.0.0.1:8000", "ws", False),  # another host
        ("https://localhost", "localhost:443", "wss", True),
        ("http://evil.example:8000", "evil.example:8000", "ws", False),  # not an allowed host
        ("null", "127.0.0.1:8000", "ws", False),
    ],
)
async def test_only_the_sites_own_origin_may_open_a_socket(origin, host, scheme, allowed):
    # Accepted handshakes reach the consumer, which closes anonymous users after accepting.
    assert await handshake(origin, host, scheme) is allowed


async def test_a_trusted_origin_may_open_a_socket(settings):
    settings.CSRF_TRUSTED_ORIGINS = ["https://chat.example.com"]
    assert await handshake("https://chat.example.com", "127.0.0.1:8000")
    assert not await handshake("https://chat.example.com:8443", "127.0.0.1:8000")
