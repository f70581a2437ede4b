"""Markdown to safe HTML for the chat UI.

Model output and user text are untrusted: markdown-it-py renders CommonMark (plus tables) with
raw HTML disabled, then nh3 keeps only a small allow-list of tags and attributes. Images are
not allowed (a remote ``<img>`` would leak the reader's address to any host the text names),
links keep only http(s)/mailto targets and get ``rel="noopener noreferrer nofollow"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import nh3
from markdown_it import MarkdownIt
from markdown_it.common.utils import escapeHtml
from markdown_it.token import Token

__all__ = ["ALLOWED_TAGS", "render_markdown"]

ALLOWED_TAGS: frozenset[str] = frozenset(
    {
        "a",
        "blockquote",
        "br",
        "code",
        "del",
        "em",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "hr",
        "li",
        "ol",
        "p",
        "pre",
        "s",
        "strong",
        "table",
        "tbody",
        "td",
        "th",
        "thead",
        "tr",
        "ul",
    }
)

_ATTRIBUTES: dict[str, set[str]] = {
    "a": {"href", "title"},
    "code": {"class"},
    "ol": {"start"},
    "th": {"class"},
    "td": {"class"},
}

_markdown = MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def _image_as_link(self: Any, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    # An image becomes a plain link to it: the reader chooses whether to load it.
    token = tokens[idx]
    label = token.content or "image"
    href = escapeHtml(str(token.attrGet("src") or ""))
    return f'<a href="{href}">{escapeHtml(label)}</a>'


_markdown.add_render_rule("image", _image_as_link)


def _alignment_as_class(state: Any) -> None:
    # A table cell's alignment becomes a class: the CSP refuses ``style`` attributes (the
    # browser's renderer, static/orkestrel/markdown.js, does the same).
    for token in state.tokens:
        style = token.attrGet("style")
        if not style:
            continue
        del token.attrs["style"]
        side = str(style).removeprefix("text-align:").strip()
        if side in ("left", "center", "right"):
            token.attrJoin("class", f"align-{side}")


_markdown.core.ruler.push("alignment_as_class", _alignment_as_class)


def _filter_attribute(tag: str, attribute: str, value: str) -> str | None:
    # Only a fenced block's ``language-*`` class and a cell's ``align-*`` survive: any other
    # class could dress model text up as the UI's own badges.
    if attribute == "class":
        allowed = ("language-", "align-") if tag in ("th", "td") else ("language-",)
        kept = [name for name in value.split() if name.startswith(allowed)]
        return " ".join(kept) or None
    return value


_cleaner = nh3.Cleaner(
    tags=set(ALLOWED_TAGS),
    attributes=_ATTRIBUTES,
    attribute_filter=_filter_attribute,
    url_schemes={"http", "https", "mailto"},
    link_rel="noopener noreferrer nofollow",
    strip_comments=True,
)


def render_markdown(text: str) -> str:
    """Render ``text`` as CommonMark (with tables) and sanitize the HTML."""
    if not text:
        return ""
    return _cleaner.clean(_markdown.render(text))
