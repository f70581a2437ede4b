"""The browser's markdown (static/orkestrel/markdown.js) keeps the server's allow-list
(conversations/rendering.py): a tag allowed in one place and not the other fails here."""

from __future__ import annotations

import re
from pathlib import Path

from django.conf import settings

from conversations.rendering import ALLOWED_TAGS

SOURCE = (Path(settings.BASE_DIR) / "static" / "orkestrel" / "markdown.js").read_text()


def _js_list(name: str) -> set[str]:
    found = re.search(rf"export const {name} = \[(.*?)\];", SOURCE, re.S)
    assert found, f"markdown.js has no {name} list"
    return set(re.findall(r'"([a-z0-9]+)"', found.group(1)))


def test_the_browser_allows_the_servers_tags_and_names_its_additions() -> None:
    assert _js_list("ALLOWED_TAGS") == set(ALLOWED_TAGS)
    assert _js_list("BROWSER_TAGS") == {"input"}


def test_neither_side_allows_style_attributes() -> None:
    allowed = re.search(r"const ALLOWED_ATTR = \[(.*?)\];", SOURCE, re.S)
    assert allowed and '"style"' not in allowed.group(1)
    assert (
        "filter_style_properties"
        not in (Path(settings.BASE_DIR) / "conversations" / "rendering.py").read_text()
    )
