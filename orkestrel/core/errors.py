"""The kit's errors, in one module.

Hierarchy::

    OrkestrelError                 base of every error the kit raises on purpose; carries ``code``
    ├── ProviderError              a concrete provider's failure (HTTP, transport, malformed stream)
    ├── ProviderAbortError         a provider call cancelled mid-flight; carries ``partial``
    ├── ConversationError          code: "SUMMARIZER" | "SECTIONS"
    ├── WorkspaceError             code: MODALITY, PATTERN, RANGE or TOOL; optional ``context``
    ├── AgentError                 code: "CONCURRENCY"
    └── AgentJobError              a durable job that ended partial; carries ``partial``

Input validation at constructors and guards raises the built-in ``TypeError`` / ``ValueError``
naming the offending field; these classes are for the domain's own failure modes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from .chunks import AgentResult
    from .provider import ProviderResult

__all__ = [
    "AgentError",
    "AgentErrorCode",
    "AgentJobError",
    "ConversationError",
    "ConversationErrorCode",
    "OrkestrelError",
    "ProviderAbortError",
    "ProviderError",
    "WorkspaceError",
    "WorkspaceErrorCode",
]

ConversationErrorCode = Literal["SUMMARIZER", "SECTIONS"]
WorkspaceErrorCode = Literal["MODALITY", "PATTERN", "RANGE", "TOOL"]
AgentErrorCode = Literal["CONCURRENCY"]


class OrkestrelError(Exception):
    """Base class of every error the kit raises deliberately; ``code`` is machine-readable."""

    code: str = "ERROR"

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else ""


class ProviderError(OrkestrelError):
    """A concrete provider failed: HTTP status, broken connection, or a malformed stream.

    ``body`` is a short excerpt of the response body (never a credential).
    """

    code = "PROVIDER"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int | None = None,
        body: str | None = None,
        retryable: bool = False,
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.body = body
        self.retryable = retryable


class ProviderAbortError(OrkestrelError):
    """A provider call was cancelled mid-flight; ``partial`` holds what streamed before."""

    code = "ABORT"

    def __init__(self, partial: ProviderResult, reason: object = None) -> None:
        super().__init__(f"provider call aborted: {reason!r}" if reason is not None else "aborted")
        self.partial = partial
        self.reason = reason


class ConversationError(OrkestrelError):
    """Compaction without a summarizer (``SUMMARIZER``) or a sections cap below 1 (``SECTIONS``)."""

    def __init__(self, code: ConversationErrorCode, message: str) -> None:
        super().__init__(message, code=code)


class WorkspaceError(OrkestrelError):
    """A workspace edit refused: ``MODALITY``, ``PATTERN``, ``RANGE`` or ``TOOL``."""

    def __init__(
        self, code: WorkspaceErrorCode, message: str, *, context: Mapping[str, Any] | None = None
    ) -> None:
        super().__init__(message, code=code)
        self.context = dict(context) if context is not None else None


class AgentError(OrkestrelError):
    """A run refused synchronously, e.g. ``CONCURRENCY`` when accounting would be shared."""

    def __init__(self, code: AgentErrorCode, message: str) -> None:
        super().__init__(message, code=code)


class AgentJobError(OrkestrelError):
    """A durable job ended partial while partial results are not allowed; carries ``partial``."""

    code = "PARTIAL"

    def __init__(self, partial: AgentResult, message: str = "agent job ended partial") -> None:
        super().__init__(message)
        self.partial = partial
