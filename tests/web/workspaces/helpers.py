"""Builders shared by the workspaces tests: real kit workspaces with text and binary files."""

from __future__ import annotations

import base64
import uuid

from orkestrel.core import Workspace, create_binary_content, create_file, create_workspace

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\nworkspace").decode()
GIF = base64.b64encode(b"GIF89a-logo").decode()


def new_id() -> str:
    return str(uuid.uuid4())


def project(id: str | None = None) -> Workspace:
    """A workspace seeded with a PNG, then edited: two text files in insertion order."""
    workspace = create_workspace(
        id=id or new_id(),
        seed=[create_file("logo.png", create_binary_content(PNG, "image/png"))],
    )
    workspace.write("main.py", "print('hi')\n")
    workspace.write("README.md", "# Project\n\nNotes.")
    return workspace
