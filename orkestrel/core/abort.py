"""Cancellation: an ``AbortSignal`` and the ``Abort`` controller that fires it.

A Python take on the web's ``AbortController``: listeners run synchronously when the signal
fires, ``await signal.wait()`` parks until it does, and ``AbortSignal.any`` folds several
signals into one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

__all__ = ["Abort", "AbortListener", "AbortSignal", "create_abort"]

AbortListener = Callable[[object], None]

ABORTED = "aborted"
TIMED_OUT = "timeout"


class AbortSignal:
    """A one-shot cancellation flag with listeners; fired by its ``Abort`` controller."""

    __slots__ = ("_aborted", "_detach", "_listeners", "_reason", "_waiters")

    def __init__(self) -> None:
        self._aborted = False
        self._reason: object = None
        self._listeners: list[AbortListener] | None = None
        self._waiters: list[asyncio.Future[object]] | None = None
        self._detach: Callable[[], None] | None = None

    @property
    def aborted(self) -> bool:
        return self._aborted

    @property
    def reason(self) -> object:
        return self._reason

    def add_listener(self, listener: AbortListener) -> None:
        """Call ``listener(reason)`` once when the signal fires (never for an already-fired one)."""
        if self._aborted:
            return
        if self._listeners is None:
            self._listeners = []
        self._listeners.append(listener)

    def remove_listener(self, listener: AbortListener) -> None:
        if self._listeners:
            try:
                self._listeners.remove(listener)
            except ValueError:
                pass

    def throw_if_aborted(self) -> None:
        """Raise ``asyncio.CancelledError`` carrying the reason when fired."""
        if self._aborted:
            raise asyncio.CancelledError(self._reason)

    async def wait(self) -> object:
        """Park until the signal fires; return its reason."""
        if self._aborted:
            return self._reason
        future: asyncio.Future[object] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(future)
        try:
            return await future
        finally:
            if self._waiters and future in self._waiters:
                self._waiters.remove(future)

    def dispose(self) -> None:
        """Unhook a composite (``any``) or timed signal from its sources; it stays as it is."""
        if self._detach is not None:
            detach, self._detach = self._detach, None
            detach()

    def _fire(self, reason: object) -> None:
        if self._aborted:
            return
        self._aborted = True
        self._reason = ABORTED if reason is None else reason
        self.dispose()
        listeners, self._listeners = self._listeners, None
        waiters, self._waiters = self._waiters, None
        if waiters:
            for future in waiters:
                if not future.done():
                    future.set_result(self._reason)
        if listeners:
            for listener in listeners:
                # A listener is the caller's code: one that raises must not stop the others.
                try:
                    listener(self._reason)
                except Exception:  # noqa: BLE001
                    pass

    def __repr__(self) -> str:
        state = f"aborted reason={self._reason!r}" if self._aborted else "pending"
        return f"<AbortSignal {state}>"

    @staticmethod
    def aborted_with(reason: object = None) -> AbortSignal:
        """A signal that is already fired."""
        signal = AbortSignal()
        signal._fire(reason)
        return signal

    @staticmethod
    def any(signals: Iterable[AbortSignal | None]) -> AbortSignal:
        """A signal that fires with the first of ``signals`` to fire (``None`` entries skipped)."""
        sources = [s for s in signals if s is not None]
        for source in sources:
            if not isinstance(source, AbortSignal):
                raise TypeError(f"AbortSignal.any expects AbortSignal items, not {source!r}")
        composite = AbortSignal()
        for source in sources:
            if source._aborted:
                composite._fire(source._reason)
                return composite
        if not sources:
            return composite
        if len(sources) == 1:
            only = sources[0]
            only.add_listener(composite._fire)
            composite._detach = lambda: only.remove_listener(composite._fire)
            return composite
        for source in sources:
            source.add_listener(composite._fire)

        def detach() -> None:
            for source in sources:
                source.remove_listener(composite._fire)

        composite._detach = detach
        return composite

    @staticmethod
    def timeout(seconds: float) -> AbortSignal:
        """A signal firing with reason ``"timeout"`` after ``seconds`` (needs a running loop)."""
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
            raise ValueError(f"timeout seconds must be a non-negative number, not {seconds!r}")
        signal = AbortSignal()
        handle = asyncio.get_running_loop().call_later(seconds, signal._fire, TIMED_OUT)
        signal._detach = handle.cancel
        return signal


class Abort:
    """The controller of one ``AbortSignal``; optionally chained to a parent signal."""

    __slots__ = ("signal",)

    def __init__(self, signal: AbortSignal | None = None) -> None:
        self.signal = AbortSignal.any([signal]) if signal is not None else AbortSignal()

    @classmethod
    def linked(cls, *sources: AbortSignal | None) -> Abort:
        """An ``Abort`` whose signal also fires with the first of ``sources`` (``None`` skipped)."""
        abort = cls.__new__(cls)
        abort.signal = AbortSignal.any(sources)
        return abort

    def abort(self, reason: object = None) -> None:
        """Fire the signal (first call wins; later calls are no-ops)."""
        self.signal._fire(reason)


def create_abort(signal: AbortSignal | None = None) -> Abort:
    """Create an ``Abort``; when ``signal`` is given, its firing aborts this one too."""
    return Abort(signal)
