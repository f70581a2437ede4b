"""The kit's fixed values, named once."""

from __future__ import annotations

from typing import Final

__all__ = [
    "CONVERSATION_RECAP_PREFIX",
    "DEFAULT_AGENT_LIMIT",
    "DEFAULT_AUTHORITY_ZONE",
    "DEFAULT_CONVERSATION_KEEP",
    "IMAGE_TOKEN_ESTIMATE",
    "INSTRUCTIONS_SECTION_HEADER",
    "MESSAGE_TOKEN_OVERHEAD",
    "THINK_CLOSE",
    "THINK_OPEN",
    "WORKSPACE_SECTION_HEADER",
]

THINK_OPEN: Final = "<think>"
THINK_CLOSE: Final = "</think>"
DEFAULT_AGENT_LIMIT: Final = 10
DEFAULT_AUTHORITY_ZONE: Final = "default"
DEFAULT_CONVERSATION_KEEP: Final = 0
# Lean on purpose: a handful of tokens so a small model reads a section as a recap.
CONVERSATION_RECAP_PREFIX: Final = "[Summary of earlier messages] "
INSTRUCTIONS_SECTION_HEADER: Final = "## Instructions"
WORKSPACE_SECTION_HEADER: Final = "## Workspace"
MESSAGE_TOKEN_OVERHEAD: Final = 4
IMAGE_TOKEN_ESTIMATE: Final = 512
