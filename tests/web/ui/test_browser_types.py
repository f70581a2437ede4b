"""The chat's browser scripts type-check: every ``// @ts-check`` module of static/orkestrel/
against its JSDoc types, with the TypeScript that scripts/check_browser_types.sh pins.

Needs Node and npm (the script installs TypeScript once, outside the checkout); skipped, saying
why, on a machine without them. ``make run`` never needs Node.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

SCRIPT = Path(settings.BASE_DIR) / "scripts" / "check_browser_types.sh"
CHECKED = (
    "api.js",
    "approvals.js",
    "attachments.js",
    "branches.js",
    "chat.js",
    "composer.js",
    "dom.js",
    "failures.js",
    "header.js",
    "jump.js",
    "keys.js",
    "live.js",
    "markdown.js",
    "meters.js",
    "notices.js",
    "pending.js",
    "protocol.js",
    "render.js",
    "site.js",
    "slash.js",
    "socket.js",
    "status.js",
    "tool_cards.js",
    "transcript.js",
    "workspace.js",
)


@pytest.mark.skipif(
    shutil.which("node") is None or shutil.which("npm") is None,
    reason="the type check of the browser scripts needs Node.js and npm",
)
def test_the_browser_scripts_type_check() -> None:
    result = subprocess.run([str(SCRIPT)], capture_output=True, text=True, timeout=600)
    if result.returncode and "npm" in result.stderr and "ERR" in result.stderr:
        pytest.skip(f"TypeScript could not be installed: {result.stderr.strip()[-200:]}")
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("name", CHECKED)
def test_the_chat_modules_are_checked(name: str) -> None:
    source = (Path(settings.BASE_DIR) / "static" / "orkestrel" / name).read_text()
    assert source.startswith("// @ts-check\n"), f"{name} is not type-checked"
