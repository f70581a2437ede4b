"""A tool call's MCP result as the kit's payload: what the model reads, what the user sees.

Structured content (``structuredContent``) is the value the model reads, as JSON; otherwise
the text blocks, joined. Images go to the user on the tool card (the kit's ``display``) and
the model reads that they were shown: the kit's tool messages carry no images. An ``isError``
result raises ``McpToolError`` with the server's text, which the model reads as the error.
"""

from __future__ import annotations

import re
from typing import Any, Literal, TypedDict

import mcp_types as types
from django.conf import settings

from .errors import McpError

__all__ = ["SHOWN_IMAGE_TYPES", "DisplayedImage", "ImagesDisplay", "McpToolError", "payload_of"]

# Raster types a browser draws from a ``data:`` URL with nothing to run (no SVG); others are
# told to the model and not shown. At most this many per call.
SHOWN_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_SHOWN_IMAGES = 8
_BASE64 = re.compile(r"^[A-Za-z0-9+/]+={0,2}$")


class McpToolError(McpError):
    """The server's tool reported an error (``isError``)."""

    code = "mcp_tool_error"


class DisplayedImage(TypedDict):
    mime: str
    data: str


class ImagesDisplay(TypedDict):
    """What a tool card shows of the images a call returned."""

    kind: Literal["images"]
    images: list[DisplayedImage]


def _shown(block: types.ImageContent) -> bool:
    """Whether the tool card may draw ``block`` (a raster type, base64, within the image size)."""
    limit = settings.ORKESTREL["MAX_IMAGE_BYTES"]
    return (
        block.mime_type in SHOWN_IMAGE_TYPES
        and len(block.data) * 3 // 4 <= limit
        and bool(_BASE64.match(block.data))
    )


def _text(block: types.ContentBlock) -> str | None:
    match block:
        case types.TextContent():
            return block.text
        case types.ImageContent():
            if not _shown(block):
                return f"[image {block.mime_type}, not shown]"
            return f"[image {block.mime_type} shown to the user]"
        case types.AudioContent():
            return f"[audio {block.mime_type}, not shown]"
        case types.ResourceLink():
            return f"[resource {block.uri}]"
        case types.EmbeddedResource():
            resource = block.resource
            text = getattr(resource, "text", None)
            return text if isinstance(text, str) else f"[resource {resource.uri}]"
    return None


def payload_of(result: types.CallToolResult, server: str, tool: str) -> dict[str, Any]:
    """The kit payload (``{"result", "display"}``) of a successful call; ``McpToolError``
    for one the server's tool failed."""
    texts = [text for text in (_text(block) for block in result.content) if text]
    if result.is_error:
        detail = "\n".join(texts) or "the tool failed"
        raise McpToolError(f"{server}/{tool} failed: {detail}")
    images: list[DisplayedImage] = [
        DisplayedImage(mime=block.mime_type, data=block.data)
        for block in result.content
        if isinstance(block, types.ImageContent) and _shown(block)
    ][:MAX_SHOWN_IMAGES]
    value: Any = (
        result.structured_content if result.structured_content is not None else "\n".join(texts)
    )
    display: ImagesDisplay | None = {"kind": "images", "images": images} if images else None
    # Always a payload: a structured value that happens to look like one stays the value.
    return {"result": value, "display": display}
