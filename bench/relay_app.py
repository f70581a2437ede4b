"""ASGI entry for the relay benchmark: the real app, with a timestamping model behind ``scripted``.

``daphne bench.relay_app:application`` serves exactly ``orkestrel.asgi.application``; the only
difference is the model the ``scripted`` endpoint kind builds. A user message of the form
``relay <count> <interval>`` is answered by ``StampedProvider``: ``count`` content deltas, delta
``i`` due at ``start + i * interval`` (an absolute schedule, so loop lag never slows the rate),
each carrying the server's ``time.monotonic()`` at the moment it is yielded. Any other message
(and a summarizer call) goes to the ordinary demo model.

The swap replaces ``agents.runtime.providers.create_demo_provider``, the one name
``provider_for`` calls for ``scripted`` endpoints; the app has no registry of provider
factories yet (see ``bench/README.md``). Never import this module from the app.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import AsyncIterator, Sequence

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
django.setup()

from agents.runtime import providers as _providers  # noqa: E402
from orkestrel.core import (  # noqa: E402
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

__all__ = ["COMMAND", "StampedProvider", "application"]

COMMAND = re.compile(r"^relay (\d{1,7}) (\d+(?:\.\d+)?)$")
_create_demo_provider = _providers.create_demo_provider


class StampedProvider:
    """Streams ``relay <count> <interval>`` as timestamped deltas; delegates anything else."""

    def __init__(self, fallback: Provider, name: str) -> None:
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

    async def generate(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> ProviderResult:
        return await self._fallback.generate(messages, signal, tools, options)

    async def stream(
        self,
        messages: Sequence[Message],
        signal: AbortSignal,
        tools: Sequence[ToolDefinition] | None = None,
        options: ProviderStreamOptions | None = None,
    ) -> AsyncIterator[object]:
        match = COMMAND.match(messages[-1].content) if messages else None
        if match is None or messages[-1].role != "user":
            async for item in self._fallback.stream(messages, signal, tools, options):
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


def create_relay_provider(delay: float = 0.03, name: str = "demo") -> Provider:
    """What ``provider_for`` builds for a ``scripted`` endpoint while benchmarking."""
    return StampedProvider(_create_demo_provider(delay=delay, name=name), name)


_providers.create_demo_provider = create_relay_provider

from orkestrel.asgi import application  # noqa: E402
