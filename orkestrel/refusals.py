"""Refusals: a request declined for a reason the client can act on, carrying its own answer.

Like DRF's ``APIException`` (``status_code``, ``default_code``), every refusal names its
machine ``code`` and its HTTP ``status_code`` as class attributes, and each front door maps
the one base once: the REST API's exception handler (problem JSON), the websocket's ``error``
frame (``orkestrel.protocol.refused``) and ``/v1``'s error mapping (OpenAI's vocabulary).
A new refusal subclasses ``Refusal``, sets both attributes, and every door answers it::

    Refusal
    ├── agents.runs.errors: Busy (AwaitingApproval), TooManyRuns, StartFailed, ToolClash,
    │   UnknownProfile, UnknownToolCall, NothingToContinue, ProfileForbidden, NotPaused,
    │   NothingPending
    ├── agents.runtime: NoProfileError, ModelUnavailable, UnknownSkill, CompactionFailed,
    │   NoSuchInput, InputInvalid
    └── conversations: ApprovalRefused, BranchBusy, NoSuchBranch, NotBranchable, ForkBusy,
        PendingFull

Each keeps its built-in base too (``LookupError``, ``RuntimeError``...), so the code that
catches those still does.
"""

from __future__ import annotations

__all__ = ["Refusal"]


class Refusal(Exception):
    """A declined request: its ``code`` for programs, its HTTP ``status_code``, and the
    message (``str``) for people."""

    code: str = "refused"
    """What programs branch on: the websocket frame's and the REST body's ``code``."""
    status_code: int = 400
    """The HTTP status an HTTP front door answers it with."""
    field: str | None = None
    """The request field at fault, if any: the REST API answers a ``400`` naming it (``errors``)."""
    public_detail: str | None = None
    """What HTTP answers say in place of the message, when the message is for operators."""
