"""Fixtures for the real-provider tests: a loopback ``StubServer`` and stream collectors."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from orkestrel.core.abort import AbortSignal
from orkestrel.core.provider import ProviderResult

from .server import StubServer


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A started server; script it with ``stub.enqueue(Reply(...))``."""
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


async def collect(
    provider: Any,
    messages: Sequence[Any] = ({"role": "user", "content": "hi"},),
    signal: AbortSignal | None = None,
    tools: Sequence[Any] | None = None,
    options: Any = None,
) -> tuple[list[Any], ProviderResult]:
    """Drain ``provider.stream``: the deltas, and the result it yielded last."""
    items = [
        item
        async for item in provider.stream(
            list(messages), signal or AbortSignal(), tools=tools, options=options
        )
    ]
    assert isinstance(items[-1], ProviderResult)
    assert not any(isinstance(item, ProviderResult) for item in items[:-1])
    return items[:-1], items[-1]
