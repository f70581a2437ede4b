"""The server ``make run`` and ``make up`` start: Daphne, with one change.

Daphne's websockets (autobahn) drop the TCP connection when a client breaks a transport rule,
a frame or message over the size limit included: the browser sees a bare ``1006`` and cannot
tell it from a network fault. Here they close with their code instead (``1009`` for a message
too big, with the limit in the reason), as RFC 6455 asks. Everything else is Daphne's own
command line: ``python -m orkestrel.server [daphne's options] orkestrel.asgi:application``.
"""

from __future__ import annotations

from typing import Any

from daphne.cli import CommandLineInterface
from daphne.server import Server

__all__ = ["ClosingServer", "main"]


class ClosingServer(Server):  # type: ignore[misc]  # daphne ships no type hints
    """Daphne's server whose websocket factory fails connections with a close frame."""

    @property
    def ws_factory(self) -> Any:
        return self._ws_factory

    @ws_factory.setter
    def ws_factory(self, factory: Any) -> None:
        # ``Server.run`` makes the factory and sets its options right away; ``failByDrop`` is
        # not among them, so it stays as set here.
        factory.setProtocolOptions(failByDrop=False)
        self._ws_factory = factory


class ClosingCommandLine(CommandLineInterface):  # type: ignore[misc]
    server_class = ClosingServer


def main() -> None:
    """Run Daphne's command line with ``ClosingServer``."""
    ClosingCommandLine.entrypoint()


if __name__ == "__main__":
    main()
