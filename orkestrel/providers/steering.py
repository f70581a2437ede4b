"""What a caller steers the model with, as every wire protocol reads it: ``tool_choice``,
``parallel_tool_calls`` and the answer's format, and the ones a protocol cannot honour.

A provider never drops such an option: it names the one it cannot honour (``unsupported``,
which a front door answers with a ``400`` before anything runs) and refuses a call that
carries it anyway (``UnsupportedOption``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from orkestrel.core.provider import (
    NamedToolChoice,
    ProviderStreamOptions,
    ResponseFormat,
    ToolChoice,
)

__all__ = [
    "TOOL_CHOICE_MODES",
    "RequestOption",
    "Unsupported",
    "UnsupportedOption",
    "answer_format",
    "forces_tool",
]

TOOL_CHOICE_MODES: Final[tuple[str, ...]] = ("auto", "none", "required")


def answer_format(options: ProviderStreamOptions) -> ResponseFormat | None:
    """The answer's format: ``response_format`` as asked, else ``schema`` as an unnamed JSON
    Schema, else ``None`` (free text)."""
    if options.response_format is not None:
        return options.response_format
    if options.schema is not None:
        return ResponseFormat(type="json_schema", schema=options.schema)
    return None


def forces_tool(choice: ToolChoice | None) -> bool:
    """Whether ``choice`` makes the model call a tool (``required``, or a named one)."""
    return choice == "required" or isinstance(choice, NamedToolChoice)


# The request options a wire protocol may be unable to honour, by their kit names.
RequestOption = Literal[
    "tool_choice", "parallel_tool_calls", "response_format", "response_format.strict"
]


@dataclass(frozen=True, slots=True)
class Unsupported:
    """A request option a wire protocol cannot honour, and why (a front door answers ``400``
    naming it; a provider given it anyway raises ``UnsupportedOption``)."""

    option: RequestOption
    reason: str


class UnsupportedOption(ValueError):
    """A provider was asked for an option its wire protocol cannot honour (never dropped
    silently)."""

    def __init__(self, provider: str, unsupported: Unsupported) -> None:
        super().__init__(f"{provider}: {unsupported.option}: {unsupported.reason}")
        self.unsupported = unsupported
