"""Keeping every outgoing websocket frame under the server's message limit.

A websocket server drops a message over its limit (Daphne's is 1 MiB, for outgoing messages
too) without a word: an answer never finishes, a conversation never opens. Text frames are
split where they are made (``agents.runs.chunk_frames``); what is left too big here is shrunk
(a ``state`` or ``committed`` frame without its rendered HTML, a ``finish`` without the text
its token and think frames carried, a ``state`` with fewer of the newest messages) or, failing
that, dropped with a WARNING: the gap in ``seq`` makes the client resync, and the ``state`` it
gets back fits.
"""

from __future__ import annotations

import logging
from typing import Any

from orkestrel.protocol import ServerFrame, encode, encode_text

__all__ = ["MAX_OUTGOING_BYTES", "fitted"]

logger = logging.getLogger(__name__)

# Daphne's default ``--websocket-max-message-size``, less room for the websocket's framing.
MAX_OUTGOING_BYTES = 1024 * 1024 - 1024


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def fitted(frame: ServerFrame | dict[str, Any], limit: int) -> str | None:
    """``frame`` as JSON text of at most ``limit`` bytes, shrunk if it must be; ``None`` when
    it cannot be (then it is dropped and logged)."""
    text = encode_text(frame)
    # A character is at most 4 bytes: most frames are known to fit without encoding them.
    if len(text) * 4 <= limit or _size(text) <= limit:
        return text
    data = dict(frame) if isinstance(frame, dict) else encode(frame)
    kind = data.get("type")
    if isinstance(data.get("messages"), list):
        data["messages"] = [{**message, "html": ""} for message in data["messages"]]
        text = encode_text(data)
        if _size(text) <= limit:
            logger.warning("sent a %s frame without its HTML: it was over %d bytes", kind, limit)
            return text
    result = data.get("result")
    if kind == "finish" and isinstance(result, dict):
        # The run's last frame must arrive, or the client streams forever (no later frame
        # shows it a gap). Its text already went out in token and think frames, split to fit;
        # the committed messages and the run's record keep it whole.
        thinking = result.get("thinking")
        data["result"] = {**result, "content": "", "thinking": "" if thinking else thinking}
        text = encode_text(data)
        if _size(text) <= limit:
            logger.warning("sent a finish frame without its text: it was over %d bytes", limit)
            return text
    if kind == "state":
        messages = data["messages"]
        while messages and _size(text) > limit:
            # The newest messages matter most; the client pages back through ``earlier``.
            dropped = max(1, len(messages) // 4)
            messages = messages[dropped:]
            data["messages"] = messages
            data["earlier"] = int(data.get("earlier") or 0) + dropped
            text = encode_text(data)
        if _size(text) <= limit:
            logger.warning(
                "sent a state frame with %d messages: it was over %d bytes", len(messages), limit
            )
            return text
    logger.warning(
        "dropped a %s frame of %d bytes: over the %d-byte limit", kind, _size(text), limit
    )
    return None
