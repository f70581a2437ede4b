"""A Redis channel layer for the tests that need several 'processes' (skipped without Redis)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from channels.layers import channel_layers

needs_redis = pytest.mark.skipif(not os.environ.get("REDIS_URL"), reason="set REDIS_URL to run")


@contextmanager
def redis_layer(settings) -> Iterator[None]:
    """Point the default channel layer at ``REDIS_URL`` for the block."""
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}],
                "capacity": 10_000,
            },
        }
    }
    channel_layers.backends.clear()
    try:
        yield
    finally:
        channel_layers.backends.clear()
