"""A tool call's MCP result as the kit's payload: what the model reads, what the user sees.

Structured content (``structuredContent``) is the value the model reads, as JSON; otherwise
the text blocks, joined. Images go to the user on the tool card (the kit's ``display``) and
the model reads that they were shown: the kit's tool messages carry no images. An ``isError``
result raises ``McpToolError`` with the server's text, which the model reads as the error.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

import mcp_types as types

from .errors import McpError

__all__ = ["DisplayedImage", "ImagesDisplay", "McpToolError", "payload_of"]


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


def _text(block: types.ContentBlock) -> str | None:
    match block:
        case types.TextContent():
            return block.text
        case types.ImageContent():
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
        {"mime": block.mime_type, "data": block.data}
        for block in result.content
        if isinstance(block, types.ImageContent)
    ]
    value: Any = (
        result.structured_content if result.structured_content is not None else "\n".join(texts)
    )
    display: ImagesDisplay | None = {"kind": "images", "images": images} if images else None
    # Always a payload: a structured value that happens to look like one stays the value.
    return {"result": value, "display": display}
