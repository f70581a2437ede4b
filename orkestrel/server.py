"""The server ``make run`` and ``make up`` start: Daphne, with two changes.

- **Websocket faults close with their code.** Daphne's websockets (autobahn) drop the TCP
  connection when a client breaks a transport rule, a frame or message over the size limit
  included: the browser sees a bare ``1006`` and cannot tell it from a network fault. Here they
  close with their code instead (``1009`` for a message too big, with the limit in the
  reason), as RFC 6455 asks.
- **A body over the limit is refused as it comes.** Twisted reads a whole request body (past
  100 kB into a temporary file) before Daphne hands the request to the application, so the
  app's own gate (``orkestrel.request_gate``) could only answer after a 10 GiB upload had been
  taken in. Here a ``Content-Length`` over ``ORKESTREL["MAX_REQUEST_BYTES"]`` is answered
  ``413`` as soon as the headers are in, and a chunked body as soon as it passes the limit;
  the connection then closes, the rest unread.

Everything else is Daphne's own command line:
``python -m orkestrel.server [daphne's options] orkestrel.asgi:application``.
"""

from __future__ import annotations

from typing import Any

from daphne.cli import CommandLineInterface  # type: ignore[import-untyped]
from daphne.http_protocol import HTTPFactory, WebRequest  # type: ignore[import-untyped]
from daphne.server import Server  # type: ignore[import-untyped]
from django.conf import settings
from twisted.web import http

from .request_gate import too_large

__all__ = ["BoundedRequest", "OrkestrelServer", "main"]


class BoundedRequest(WebRequest):
    """Daphne's request, refused with a ``413`` once its body is known to pass the limit."""

    refused = False
    _received = 0

    def gotLength(self, length: int | None) -> None:
        self._limit: int = settings.ORKESTREL["MAX_REQUEST_BYTES"]
        if length is not None and length > self._limit:
            self._refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.refused:
            return
        self._received += len(data)
        if self._received > self._limit:
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if not self.refused:  # a refused body may still end in the bytes already read
            super().requestReceived(command, path, version)

    def _refuse(self) -> None:
        self.refused = True
        # The request line was read, not yet handed to the request: the channel holds it.
        path = bytes(getattr(self.channel, "_path", b"")).decode("latin-1")
        body, content_type = too_large(path, self._limit)
        head = (
            "HTTP/1.1 413 Request Entity Too Large\r\n"
            f"Content-Type: {content_type}\r\n"
            f"Content-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n"
        )
        transport = self.channel.transport
        transport.write(head.encode() + body)
        transport.loseConnection()


class BoundedHTTPFactory(HTTPFactory):
    """Daphne's HTTP factory, making ``BoundedRequest``s."""

    def buildProtocol(self, addr: Any) -> http.HTTPChannel:
        protocol = super().buildProtocol(addr)
        protocol.requestFactory = BoundedRequest
        return protocol


class OrkestrelServer(Server):
    """Daphne's server whose websocket factory fails connections with a close frame, and
    whose requests are bounded."""

    @property
    def http_factory(self) -> Any:
        return self._http_factory

    @http_factory.setter
    def http_factory(self, factory: Any) -> None:
        # ``Server.run`` makes Daphne's own; ours is the same but for the requests it makes.
        self._http_factory = BoundedHTTPFactory(factory.server)

    @property
    def ws_factory(self) -> Any:
        return self._ws_factory

    @ws_factory.setter
    def ws_factory(self, factory: Any) -> None:
        # ``Server.run`` makes the factory and sets its options right away; ``failByDrop`` is
        # not among them, so it stays as set here.
        factory.setProtocolOptions(failByDrop=False)
        self._ws_factory = factory


class OrkestrelCommandLine(CommandLineInterface):
    server_class = OrkestrelServer


def main() -> None:
    """Run Daphne's command line with ``OrkestrelServer``."""
    OrkestrelCommandLine.entrypoint()


if __name__ == "__main__":
    main()
