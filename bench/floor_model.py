"""The stamping model of the relay benchmark's servers, the app's and the floor's.

``bench/relay_app.py`` puts it behind the app's ``scripted`` endpoint kind; ``bench/relay_floor.py``
calls it directly. A user message ``relay <count> <interval>`` is answered with ``count``
content deltas ``"<i>:<stamp µs>:<lag µs> "``, delta ``i`` due at ``start + i * interval`` (an
absolute schedule, so loop lag never slows the rate), each stamped with the server's
``time.monotonic()`` the moment it is yielded. Any other message goes to the fallback model.

It imports nothing but the kit, so the floor server loads none of the app's run machinery.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import AsyncIterator, Sequence

from orkestrel.core import (
    AbortSignal,
    ContentDelta,
    ContextFormat,
    Message,
    Provider,
    ProviderAbortError,
    ProviderResult,
    ProviderStreamOptions,
    TokenUsage,
    ToolDefinition,
)

__all__ = ["COMMAND", "StampedProvider"]

COMMAND = re.compile(r"^relay (\d{1,7}) (\d+(?:\.\d+)?)$")


class StampedProvider:
    """Streams ``relay <count> <interval>`` as timestamped deltas; delegates anything else."""

    def __init__(self, fallback: Provider | None, name: str) -> None:
        self._fallback = fallback
        self._name = name

    @property
    def id(self) -> str:
        return self._name

    @property
    def name(self) -> str:
        return self._name

    @property
    def format(self) -> ContextFormat | None:
        return None

    def _other(self) -> Provider:
        if self._fallback is None:
            raise ValueError("not a relay command, and this model has no fallback")
        return self._fallback

    async def generate(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult:
        return await self._other().generate(messages, signal, tools, options)

    async def stream(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncIterator[object]:
        match = COMMAND.match(messages[-1].content) if messages else None
        if match is None or messages[-1].role != "user":
            async for item in self._other().stream(messages, signal, tools, options):
                yield item
            return
        count, interval = int(match[1]), float(match[2])
        parts: list[str] = []
        start = time.monotonic()
        for index in range(count):
            due = start + index * interval
            wait = due - time.monotonic()
            # Even at interval 0 each delta yields to the loop once, like a network provider
            # whose next chunk is always already buffered.
            await asyncio.sleep(wait if wait > 0 else 0)
            if signal.aborted:
                raise ProviderAbortError(ProviderResult("".join(parts)), signal.reason)
            now = time.monotonic()
            text = f"{index}:{int(now * 1e6)}:{int((now - due) * 1e6)} "
            parts.append(text)
            yield ContentDelta(text)
        yield ProviderResult(
            "".join(parts), usage=TokenUsage(1, count, count + 1), stop_reason="stop"
        )
