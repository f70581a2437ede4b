"""``asking``: the MCP server whose tools ask the user for input (``tests/mcp_input_server.py``),
on the 2025-11-25 revision, for a test's run to call; the tool catalog is emptied around it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.mcp.catalog import catalog
from tests.mcp_input_server import SCRIPT
from tests.mcp_server import McpProcess

__all__ = ["asking"]


@pytest.fixture
def asking(tmp_path: Path) -> Iterator[McpProcess]:
    catalog.clear()
    server = McpProcess.start(tmp_path / "mcp.log", env={"MCP_TEST_LEGACY": "1"}, script=SCRIPT)
    try:
        yield server
    finally:
        server.stop()
        catalog.clear()
