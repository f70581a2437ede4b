"""A small synchronous event emitter that isolates its listeners.

A listener that raises never reaches the code that emitted: the error goes to the emitter's
``error`` handler as ``(error, event)``; a raising ``error`` handler is swallowed (no
recursion); with no handler the error is dropped.

An emitter is generic in its event names: an owner declares its closed set as a ``Literal``
(``Emitter[AgentEvent]``), so a misspelt ``on("finsh", ...)`` fails the type check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["Emitter", "ErrorHandler", "Listener"]

Listener = Callable[..., Any]
ErrorHandler = Callable[[BaseException, str], Any]


class Emitter[E: str]:
    """Named events (``E``: a ``Literal`` of names); ``on`` returns an unsubscribe callable."""

    __slots__ = ("_error", "_listeners")

    def __init__(
        self,
        on: Mapping[E, Listener | Iterable[Listener]] | None = None,
        error: ErrorHandler | None = None,
    ) -> None:
        self._listeners: dict[E, list[Listener]] = {}
        self._error = error
        if on is not None:
            if not isinstance(on, Mapping):
                raise TypeError("on must map event names to listeners")
            for event, listeners in on.items():
                if callable(listeners):
                    self.on(event, listeners)
                elif listeners is not None:
                    for listener in listeners:
                        self.on(event, listener)

    def on(self, event: E, listener: Listener) -> Callable[[], None]:
        """Subscribe ``listener`` to ``event``; call the returned function to unsubscribe."""
        if not callable(listener):
            raise TypeError(f"listener for {event!r} must be callable")
        # Copy-on-write so an emit in progress keeps iterating the list it started with.
        self._listeners[event] = [*self._listeners.get(event, ()), listener]
        return lambda: self.off(event, listener)

    def once(self, event: E, listener: Listener) -> Callable[[], None]:
        """Subscribe for the next emission only."""

        def wrapper(*args: Any) -> Any:
            unsubscribe()
            return listener(*args)

        unsubscribe = self.on(event, wrapper)
        return unsubscribe

    def off(self, event: E, listener: Listener) -> None:
        listeners = self._listeners.get(event)
        if not listeners:
            return
        remaining = [item for item in listeners if item is not listener]
        if len(remaining) == len(listeners):
            return
        if remaining:
            self._listeners[event] = remaining
        else:
            del self._listeners[event]

    def has(self, event: E) -> bool:
        """Whether ``event`` has any listener (lets hot paths skip building a payload)."""
        return event in self._listeners

    def count(self, event: E | None = None) -> int:
        if event is not None:
            return len(self._listeners.get(event, ()))
        return sum(len(items) for items in self._listeners.values())

    def clear(self, event: E | None = None) -> None:
        if event is None:
            self._listeners.clear()
        else:
            self._listeners.pop(event, None)

    def emit(self, event: E, *args: Any) -> None:
        """Call every listener of ``event`` with ``args``; never raises."""
        listeners = self._listeners.get(event)
        if not listeners:
            return
        for listener in listeners:
            try:
                listener(*args)
            except Exception as error:  # noqa: BLE001 - isolation is the contract
                self._report(error, event)

    def _report(self, error: BaseException, event: str) -> None:
        handler = self._error
        if handler is None:
            return
        try:
            handler(error, event)
        except Exception:  # noqa: BLE001 - a broken error handler must not recurse
            pass
