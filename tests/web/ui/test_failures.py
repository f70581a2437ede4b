"""How the chat words a failure (static/orkestrel/failures.js), checked under Node: one plain
sentence per kind of failure, retries counted, the server's technical text kept apart.

The browser tests (tests/e2e/test_chat_errors.py) show the same sentences in the page."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from django.conf import settings

NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="Node.js is not installed")
def test_failures_read_as_one_plain_sentence_each() -> None:
    script = Path(__file__).parent / "js" / "failures_check.mjs"
    module = Path(settings.BASE_DIR) / "static" / "orkestrel" / "failures.js"
    result = subprocess.run(
        [str(NODE), str(script), str(module)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ok ")
