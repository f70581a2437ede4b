"""The chat UI's static files: every module parses, and the frame-ordering rules hold.

Run with Node when it is installed (the browser tests cover the same code in Chromium).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

STATIC = Path(settings.BASE_DIR) / "static" / "orkestrel"
MODULES = sorted(STATIC.glob("*.js"))
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="Node.js is not installed")


def test_the_chat_modules_and_stylesheet_exist():
    names = {path.name for path in MODULES}
    assert {"chat.js", "live.js", "protocol.js", "render.js", "workspace.js"} <= names
    assert (STATIC / "chat.css").is_file()


@needs_node
@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.name)
def test_module_parses_as_an_es_module(module):
    result = subprocess.run(
        [NODE, "--input-type=module", "--check"],
        stdin=module.open("rb"),
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr.decode()


def run_check(script: str, module: str) -> None:
    """Run ``tests/web/ui/js/<script>`` under Node against ``static/orkestrel/<module>``."""
    path = Path(__file__).parent / "js" / script
    result = subprocess.run(
        [NODE, str(path), str(STATIC / module)], capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr.decode()
    assert result.stdout.decode().startswith("ok ")


@needs_node
def test_frame_ordering_rules():
    run_check("protocol_check.mjs", "protocol.js")


@pytest.mark.parametrize("module", MODULES, ids=lambda path: path.name)
def test_module_uses_no_remote_resources(module):
    source = module.read_text()
    assert "http://" not in source and "https://" not in source
    assert "eval(" not in source and "new Function" not in source


@needs_node
def test_tool_messages_become_results_errors_and_denials_on_their_cards():
    run_check("transcript_check.mjs", "render.js")
