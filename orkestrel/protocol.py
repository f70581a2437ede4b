"""The wire protocol of runs: every frame a client sends or receives, and their payloads.

One vocabulary for every front door: the chat's websocket sends these frames as JSON text, the
REST API streams them as Server-Sent Events (``event: <type>``, ``data: <frame>``). Each frame
is a frozen dataclass with a ``Literal`` ``type``; ``encode`` is the one serializer and
``parse_client_frame`` the one reader of client frames. The README's protocol tables are
checked against ``CLIENT_FRAMES`` and ``SERVER_FRAMES`` by a test.

Payloads (a message, a section, a tool call, usage, a run's in-flight snapshot, a result) have
one shape each, built by the ``*_payload`` functions here.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, NotRequired, TypedDict

from django.conf import settings

from orkestrel.core import AgentResult, TokenUsage, ToolCall, ToolResult
from orkestrel.refusals import Refusal

__all__ = [
    "APPROVAL_DECISIONS",
    "CLIENT_FRAMES",
    "INPUT_ACTIONS",
    "IMAGE_SIGNATURES",
    "MAX_FRAME_BYTES",
    "MAX_IMAGES",
    "SERVER_FRAMES",
    "AbortFrame",
    "BranchPayload",
    "BranchesFrame",
    "DocumentPayload",
    "BlockEndFrame",
    "BlockStartFrame",
    "ApprovalFrame",
    "ApprovalPayload",
    "ClientAbort",
    "ClientAnswer",
    "ClientApprove",
    "ClientCompact",
    "ClientEdit",
    "ClientRegenerate",
    "ClientSelectBranch",
    "ClientPendingPop",
    "ClientFrame",
    "ClientResync",
    "ClientRespond",
    "ClientSend",
    "CommittedFrame",
    "CompactionFrame",
    "ContextPayload",
    "ErrorFrame",
    "ExhaustFrame",
    "InputAction",
    "InputFieldKind",
    "InputFieldPayload",
    "InputFrame",
    "InputOptionPayload",
    "InputRequestPayload",
    "InputSettledPayload",
    "NoticeFrame",
    "PendingFrame",
    "PendingPayload",
    "QuestionFrame",
    "QuestionPayload",
    "TakenAttachmentPayload",
    "WaitFrame",
    "FinishFrame",
    "FrameError",
    "Limits",
    "MessagePayload",
    "RequestDoneFrame",
    "RequestErrorFrame",
    "RequestStartFrame",
    "ResultPayload",
    "AnsweredPayload",
    "RunSnapshot",
    "RunningPayload",
    "SectionPayload",
    "ServerFrame",
    "SkillsFrame",
    "StartedFrame",
    "StateFrame",
    "ThinkFrame",
    "TokenFrame",
    "ToolCallFrame",
    "ToolExecuteFrame",
    "ToolFrame",
    "ToolPayload",
    "ToolProgressFrame",
    "UsageFrame",
    "UsagePayload",
    "encode",
    "encodable",
    "encode_text",
    "call_payload",
    "check_attachments",
    "check_decision",
    "check_image",
    "check_message",
    "check_message_id",
    "check_response",
    "context_payload",
    "message_payload",
    "parse_client_frame",
    "result_payload",
    "tool_payload",
    "usage_payload",
]

IMAGE_SIGNATURES = (
    b"\x89PNG\r\n\x1a\n",
    b"\xff\xd8\xff",
    b"GIF87a",
    b"GIF89a",
)
MAX_IMAGES = 8
# Under the 1 MiB a websocket server accepts by default (Daphne's), so an oversized frame gets
# a ``too_large`` answer instead of a dead socket; images go up over HTTP (``attachments``).
MAX_FRAME_BYTES = 1024 * 1024 - 4096
# ``Limits``' defaults, named here: on a slotted dataclass ``Limits.max_message_chars`` is the
# slot descriptor, not the default.
_DEFAULT_MAX_MESSAGE_CHARS = 100_000
_DEFAULT_MAX_IMAGE_BYTES = 5 * 2**20


# -- payloads ---------------------------------------------------------------------------------


class MessagePayload(TypedDict):
    """A committed message; ``html`` is its sanitized rendering ("" where none is shown).

    ``thinking`` is an answer's reasoning as it streamed ("" when none), ``thinking_ms`` how
    long it took (``None``: unknown); the model never reads them back.
    """

    id: str
    role: str
    content: str
    html: str
    calls: list[dict[str, Any]] | None
    tool_call_id: str | None
    images_count: int
    thinking: str
    thinking_ms: int | None
    documents: list[DocumentPayload]


class DocumentPayload(TypedDict):
    """A document on a user message as the transcript shows it: ``pages`` is a PDF's page
    count (``None`` for other formats), ``preview`` the start of its first page's text."""

    name: str
    mime: str
    size: int
    pages: int | None
    preview: str


class SectionPayload(TypedDict):
    """A compacted section: its recap, how many originals it holds, and (when sent) them."""

    id: str
    summary: str
    html: str
    count: int
    messages: list[MessagePayload]


class UsagePayload(TypedDict):
    """Token counters and cost: ``prompt`` counts cached input too (``cache_read``,
    ``cache_write``), ``completion`` reasoning too (``reasoning``); ``cost`` is USD as a decimal
    string, ``None`` when the model has no price (unknown, not free)."""

    prompt: int
    completion: int
    total: int
    cache_read: int
    cache_write: int
    reasoning: int
    cost: str | None


class ContextPayload(TypedDict):
    """The context-window meter: tokens in use, and the window (``None``: unset).

    ``used`` is the provider's count of the latest call's prompt; ``approximate`` when no
    provider count stands for the history as it is (then ``used`` is an estimate).
    """

    used: int
    window: int | None
    approximate: NotRequired[bool]


class ToolPayload(TypedDict):
    """One dispatched tool call and its outcome; a denial carries the authority's reason.

    ``display`` is what the tool shows the user on its card (an edit's diff), never sent to
    the model; ``None`` when the tool returned none.
    """

    call: dict[str, Any]
    result: dict[str, Any]
    denied: bool
    reason: str | None
    display: Any


class AnsweredPayload(TypedDict):
    """The model that wrote an answer: ``model`` as called (``<endpoint>/<model>``) and
    ``response_model`` as the provider reported it (``""`` when it named none)."""

    model: str
    response_model: str


class RunningPayload(TypedDict):
    """A tool call still running: ``elapsed`` seconds so far, ``display`` its card's latest
    ``tool_progress`` (``None`` before any)."""

    call: dict[str, Any]
    elapsed: float
    display: Any


class RunSnapshot(TypedDict):
    """A run's in-flight answer as of ``seq``: a client joining mid-run starts from here
    (``running``: the calls still running, with their progress)."""

    id: int
    seq: int
    content: str
    thinking: str
    tools: list[ToolPayload]
    running: list[RunningPayload]
    # The run's MCP servers' requests for the user's input that wait now (``InputFrame``).
    inputs: NotRequired[list[InputRequestPayload]]


class PendingPayload(TypedDict):
    """A message waiting for the next run."""

    id: int
    content: str
    images_count: int
    nonce: str


class TakenAttachmentPayload(TypedDict):
    """An image of a pending message taken back, waiting again as an attachment: a ``send``
    names it by ``id`` in ``attachments``; ``message`` is the index in ``taken`` of the text
    it came with."""

    id: str
    mime: str
    size: int
    message: int
    # A document's (``DocumentPayload``'s fields): an image has none of them.
    name: NotRequired[str]
    pages: NotRequired[int | None]
    preview: NotRequired[str]


class ApprovalPayload(TypedDict):
    """A tool call held for a person's decision (``status``: pending, approved, denied,
    expired); ``approver`` is ``owner`` or ``staff`` (an operator, in the admin)."""

    id: int
    call_id: str
    tool: str
    arguments: Any
    parameters: Any
    approver: str
    status: str
    reason: str
    rule: str
    zone: str
    run: int
    conversation: str
    created: str
    expires: str | None
    decided: str | None
    decided_by: str | None


class BranchPayload(TypedDict):
    """A branch point of the live tail: the alternatives after the message ``point`` (``""``:
    the start), ``index`` the chosen one of ``count``; ``message`` is the chosen one's first
    message (``None`` while it holds none) and ``error`` why its run failed ("" if it did not)."""

    point: str
    message: str | None
    index: int
    count: int
    error: str


class ResultPayload(TypedDict):
    content: str
    thinking: str | None
    usage: UsagePayload | None
    partial: bool
    stop: str
    reason: NotRequired[str | None]
    # Which model answered (a chat run's ``finish``): as called, and as the provider reported.
    model: NotRequired[str]
    response_model: NotRequired[str]


def message_payload(
    *,
    id: str,
    role: str,
    content: str,
    html: str = "",
    calls: list[dict[str, Any]] | None = None,
    tool_call_id: str | None = None,
    images_count: int = 0,
    thinking: str = "",
    thinking_ms: int | None = None,
    documents: list[DocumentPayload] | None = None,
) -> MessagePayload:
    """The one shape of a message on the wire."""
    return {
        "id": id,
        "role": role,
        "content": content,
        "html": html,
        "calls": calls or None,
        "tool_call_id": tool_call_id or None,
        "images_count": images_count,
        "thinking": thinking,
        "thinking_ms": thinking_ms if thinking else None,
        "documents": documents or [],
    }


def usage_payload(usage: TokenUsage, cost: Decimal | None = None) -> UsagePayload:
    """The one shape of usage on the wire (``cost`` in USD, ``None``: no price)."""
    return {
        "prompt": usage.prompt,
        "completion": usage.completion,
        "total": usage.total,
        "cache_read": usage.cache_read,
        "cache_write": usage.cache_write,
        "reasoning": usage.reasoning,
        # A string: JSON numbers would round a price of a few millionths of a cent.
        "cost": format(cost.normalize(), "f") if cost is not None else None,
    }


def context_payload(
    window: int | None, reported: int | None = None, estimate: int = 0
) -> ContextPayload:
    """The meter: the provider's count when there is one, else the estimate, approximate."""
    if reported:
        return {"used": reported, "window": window, "approximate": False}
    return {"used": estimate, "window": window, "approximate": True}


def call_payload(call: ToolCall) -> dict[str, Any]:
    """A tool call as frames carry it: ``{id, name, arguments}``."""
    return {"id": call.id, "name": call.name, "arguments": dict(call.arguments)}


def tool_payload(call: ToolCall, result: ToolResult) -> ToolPayload:
    """A tool call with its outcome: ``result`` is ``{"value": ...}`` or ``{"error": ...}``."""
    error = result.error
    outcome: dict[str, Any] = {"error": error} if error is not None else {"value": result.value}
    denial = result.denial
    display = result.display
    return {
        "call": call_payload(call),
        "result": _jsonable(outcome),
        "denied": denial is not None,
        "reason": denial.reason if denial is not None else None,
        "display": _jsonable(display) if display is not None else None,
    }


def result_payload(result: AgentResult) -> ResultPayload:
    return {
        "content": result.content,
        "thinking": result.thinking,
        "usage": usage_payload(result.usage) if result.usage else None,
        "partial": result.partial,
        "stop": result.stop,
    }


def _jsonable(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError):
        return str(value)


# -- server frames ----------------------------------------------------------------------------


class QuestionPayload(TypedDict):
    """A question the model asked the user (its ``ask_user`` tool; ``status``: pending,
    answered, expired); ``choices`` may be empty, ``free_text`` says whether an answer outside
    them is taken."""

    id: int
    call_id: str
    question: str
    choices: list[str]
    free_text: bool
    status: str
    answer: str | None
    run: int
    conversation: str
    created: str
    expires: str | None
    answered: str | None
    answered_by: str | None


# A server's form (MCP elicitation) has flat fields of these kinds; the user accepts it (with
# the fields' values), declines it, or cancels (dismisses it without choosing).
InputFieldKind = Literal["text", "number", "integer", "boolean", "choice", "choices"]
InputAction = Literal["accept", "decline", "cancel"]
INPUT_ACTIONS: tuple[InputAction, ...] = ("accept", "decline", "cancel")


class InputOptionPayload(TypedDict):
    """One option of a ``choice`` or ``choices`` field: the ``value`` sent back, the
    ``label`` shown."""

    value: str
    label: str


class InputFieldPayload(TypedDict):
    """One field of a server's form, read from its ``requestedSchema``: ``label`` is its
    title (else its name); the limits are ``None`` where the schema sets none."""

    name: str
    kind: InputFieldKind
    label: str
    description: str
    required: bool
    default: Any
    options: list[InputOptionPayload]
    # ``text`` only: ``email``, ``uri``, ``date`` or ``date-time``.
    format: str | None
    minimum: float | None
    maximum: float | None
    min_length: int | None
    max_length: int | None
    min_items: int | None
    max_items: int | None


class InputRequestPayload(TypedDict):
    """An MCP server's request for the user's input, which one of the run's tool calls waits
    on (elicitation): a form of ``fields`` (``mode`` form), or a ``url`` to open (``mode`` url);
    ``expires`` is when it is cancelled if nobody answers."""

    id: str
    run: int
    conversation: str
    server: str
    mode: Literal["form", "url"]
    message: str
    fields: list[InputFieldPayload]
    url: str | None
    created: str
    expires: str


class InputSettledPayload(TypedDict):
    """How a request for input ended: ``action`` is what the server was told; ``by`` who
    settled it: ``user`` (an answer), ``timeout`` (none came in time), ``run`` (the run
    stopped or ended first)."""

    id: str
    action: InputAction
    by: Literal["user", "timeout", "run"]


# Every frame of a run carries the run's id and its sequence number (1, 2, ... without gaps);
# frames outside a run (``state``, a refusal, a manual compaction) carry ``None``.


@dataclass(frozen=True, slots=True, kw_only=True)
class StateFrame:
    """The committed state of a conversation and the in-flight run, on connect and resync."""

    type: Literal["state"] = "state"
    conversation: dict[str, Any]
    messages: list[MessagePayload]
    earlier: int
    sections: list[SectionPayload]
    usage: UsagePayload
    context: ContextPayload
    denials: dict[str, dict[str, str]]
    failures: list[str]
    # What a tool showed the user (an edit's diff), by call id.
    displays: dict[str, Any]
    # The latest run when it failed, was stopped or interrupted: {id, status, stop_reason, error}.
    last_run: dict[str, Any] | None
    # Messages sent while a run was busy, waiting for the next one.
    pending: list[PendingPayload]
    # Tool calls waiting for a person's decision.
    approvals: list[ApprovalPayload]
    # Tool calls a person decided, by call id: their cards say who decided, when, with what.
    decisions: dict[str, ApprovalPayload]
    # The branch points of the live tail (regenerated answers, edited messages), in order.
    branches: list[BranchPayload]
    run: RunSnapshot | None
    # Questions the model asked that wait for the user's answer.
    questions: list[QuestionPayload] = dataclasses.field(default_factory=list)
    # Which model wrote each answer of ``messages``, by message id (answers of no known run
    # are absent).
    models: dict[str, AnsweredPayload] = dataclasses.field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class StartedFrame:
    """A run began; ``message`` is the committed user message (``None`` when the run answers
    the history as it stands: a client's tool results came last)."""

    type: Literal["started"] = "started"
    run: int
    seq: int
    message: MessagePayload | None
    nonce: str | None
    title: str


@dataclass(frozen=True, slots=True, kw_only=True)
class TokenFrame:
    """Answer text (paced: one frame may carry several deltas)."""

    type: Literal["token"] = "token"
    run: int
    seq: int
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ThinkFrame:
    """Reasoning text (paced like ``token``)."""

    type: Literal["think"] = "think"
    run: int
    seq: int
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestStartFrame:
    """A model request of the run begins (seed 004's ``REQUEST_START``); ``turn`` counts
    them from 0."""

    type: Literal["request_start"] = "request_start"
    run: int
    seq: int
    turn: int


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestDoneFrame:
    """A model request ended (``REQUEST_DONE``): its ``usage`` when the model reported it."""

    type: Literal["request_done"] = "request_done"
    run: int
    seq: int
    turn: int
    usage: UsagePayload | None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestErrorFrame:
    """A model request failed (``REQUEST_ERROR``); the run's ``error`` frame follows."""

    type: Literal["request_error"] = "request_error"
    run: int
    seq: int
    turn: int
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockStartFrame:
    """A text or thinking block begins (``TEXT_START`` / ``THINKING_START``); its deltas are
    the ``token`` / ``think`` frames that follow. ``index`` counts the run's blocks from 0."""

    type: Literal["block_start"] = "block_start"
    run: int
    seq: int
    index: int
    block: Literal["text", "thinking"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BlockEndFrame:
    """A block ended (``TEXT_END`` / ``THINKING_END``): ``content`` is its whole text (the
    authoritative copy of its deltas; ``None`` past 64 Ki characters, so the frame stays under
    a socket's limit), ``seconds`` how long it streamed."""

    type: Literal["block_end"] = "block_end"
    run: int
    seq: int
    index: int
    block: Literal["text", "thinking"]
    content: str | None
    seconds: float


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallFrame:
    """A tool call as the model writes it (seed 004's ``TOOL_CALL_DELTA``): ``index`` is its
    position in the turn, ``id`` and ``name`` are set once the model gave them, ``arguments``
    is the new piece of its arguments' JSON text (append them: the ``tool_execute`` or
    ``tool`` frame that follows carries the whole)."""

    type: Literal["tool_call"] = "tool_call"
    run: int
    seq: int
    index: int
    id: str | None
    name: str | None
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolExecuteFrame:
    """A tool call starts running now (seed 004's ``TOOL_EXECUTE``); its ``tool`` frame comes
    when it ends."""

    type: Literal["tool_execute"] = "tool_execute"
    run: int
    seq: int
    call: dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolProgressFrame:
    """A running call's card now (``call``: its id; ``display``: what the tool shows of it,
    a delegate call's child: ``{kind, profile, status, attempt, progress, job, url}``); its
    ``tool`` frame replaces it when the call ends."""

    type: Literal["tool_progress"] = "tool_progress"
    run: int
    seq: int
    call: str
    display: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolFrame:
    """One dispatched tool call and its outcome (``display``: shown on the card, or ``None``)."""

    type: Literal["tool"] = "tool"
    run: int
    seq: int
    call: dict[str, Any]
    result: dict[str, Any]
    denied: bool
    reason: str | None
    display: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageFrame:
    """One provider call's usage, the conversation's running total and the context meter."""

    type: Literal["usage"] = "usage"
    run: int
    seq: int
    usage: UsagePayload
    total: UsagePayload
    context: ContextPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class CompactionFrame:
    """History was folded into a summarized section."""

    type: Literal["compaction"] = "compaction"
    run: int | None
    seq: int | None
    section: SectionPayload


@dataclass(frozen=True, slots=True, kw_only=True)
class CommittedFrame:
    """Messages that are now durable."""

    type: Literal["committed"] = "committed"
    run: int
    seq: int
    messages: list[MessagePayload]


@dataclass(frozen=True, slots=True, kw_only=True)
class FinishFrame:
    """The run settled (the last frame of every run that did not fail); a run whose process
    died ends on one too (``stop: "interrupted"``), naming the run that continues it, if any."""

    type: Literal["finish"] = "finish"
    run: int
    seq: int
    result: ResultPayload
    context: ContextPayload
    continued_by: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class AbortFrame:
    """The run was stopped; a ``finish`` follows."""

    type: Literal["abort"] = "abort"
    run: int
    seq: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ExhaustFrame:
    """The tool-iteration limit was reached; a ``finish`` follows."""

    type: Literal["exhaust"] = "exhaust"
    run: int
    seq: int
    limit: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingFrame:
    """The conversation's pending messages (sent while a run was busy; the next run takes
    them, merged), to every tab; ``taken`` (their texts) and ``attachments`` (their images,
    waiting again to be sent) are what a ``pending_pop`` gave back to its socket."""

    type: Literal["pending"] = "pending"
    run: None = None
    seq: None = None
    messages: list[PendingPayload]
    taken: list[str]
    attachments: list[TakenAttachmentPayload] = dataclasses.field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalFrame:
    """The conversation's tool calls that wait for a person, to every tab: sent when a run
    pauses on them and after each decision; ``decided`` is the approval just decided."""

    type: Literal["approval"] = "approval"
    run: None = None
    seq: None = None
    approvals: list[ApprovalPayload]
    decided: ApprovalPayload | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionFrame:
    """The conversation's questions that wait for the user's answer, to every tab: sent when a
    run pauses on them (``ask_user``) and after each answer; ``answered`` is the one just
    answered."""

    type: Literal["question"] = "question"
    run: None = None
    seq: None = None
    questions: list[QuestionPayload]
    answered: QuestionPayload | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class InputFrame:
    """A run's MCP servers ask the user for input, to every tab: the ``requests`` waiting now
    (each holds one tool call until it is answered), and ``settled``, the one just answered,
    timed out or withdrawn (``None`` when one was added)."""

    type: Literal["input"] = "input"
    run: int
    seq: int
    requests: list[InputRequestPayload]
    settled: InputSettledPayload | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillsFrame:
    """The skills active in the conversation (by name, in activation order), to every tab:
    sent when one activates (``/skill name``, or the model's ``skills`` tool)."""

    type: Literal["skills"] = "skills"
    run: None = None
    seq: None = None
    skills: list[str]


@dataclass(frozen=True, slots=True, kw_only=True)
class BranchesFrame:
    """The chosen branch changed (a regenerate, an edit, another alternative chosen), to every
    tab: the branch points now; the committed messages changed too (a client resyncs)."""

    type: Literal["branches"] = "branches"
    run: None = None
    seq: None = None
    branches: list[BranchPayload]


@dataclass(frozen=True, slots=True, kw_only=True)
class NoticeFrame:
    """Something the user should know that does not stop the run (``compaction_failed``);
    outside a run (``run`` and ``seq`` null), what a command did (``skill_activated``,
    ``skill_active``)."""

    type: Literal["notice"] = "notice"
    run: int | None = None
    seq: int | None = None
    code: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class WaitFrame:
    """The model server refused for now (a rate limit, an outage): the run retries after
    ``seconds``; ``status`` is the HTTP status (429 for a rate limit, ``None`` without one)."""

    type: Literal["wait"] = "wait"
    run: int
    seq: int
    seconds: float
    status: int | None
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorFrame:
    """A refused frame or action, or a failed run (then the run's last frame)."""

    type: Literal["error"] = "error"
    code: str
    message: str
    run: int | None = None
    seq: int | None = None

    @classmethod
    def refusing(cls, refusal: Refusal) -> ErrorFrame:
        """The websocket's answer to a refusal: its code and message (at most 500 characters:
        a failed start's names the configuration at fault, never a whole upstream body)."""
        return cls(code=refusal.code, message=str(refusal)[:500])


ServerFrame = (
    StateFrame
    | StartedFrame
    | TokenFrame
    | ThinkFrame
    | RequestStartFrame
    | RequestDoneFrame
    | RequestErrorFrame
    | BlockStartFrame
    | BlockEndFrame
    | ToolCallFrame
    | ToolExecuteFrame
    | ToolProgressFrame
    | ToolFrame
    | UsageFrame
    | CompactionFrame
    | CommittedFrame
    | FinishFrame
    | AbortFrame
    | ExhaustFrame
    | WaitFrame
    | NoticeFrame
    | PendingFrame
    | ApprovalFrame
    | QuestionFrame
    | InputFrame
    | BranchesFrame
    | SkillsFrame
    | ErrorFrame
)
SERVER_FRAMES: dict[str, type[ServerFrame]] = {
    "state": StateFrame,
    "started": StartedFrame,
    "token": TokenFrame,
    "think": ThinkFrame,
    "request_start": RequestStartFrame,
    "request_done": RequestDoneFrame,
    "request_error": RequestErrorFrame,
    "block_start": BlockStartFrame,
    "block_end": BlockEndFrame,
    "tool_call": ToolCallFrame,
    "tool_execute": ToolExecuteFrame,
    "tool_progress": ToolProgressFrame,
    "tool": ToolFrame,
    "usage": UsageFrame,
    "compaction": CompactionFrame,
    "committed": CommittedFrame,
    "finish": FinishFrame,
    "abort": AbortFrame,
    "exhaust": ExhaustFrame,
    "wait": WaitFrame,
    "notice": NoticeFrame,
    "pending": PendingFrame,
    "approval": ApprovalFrame,
    "question": QuestionFrame,
    "input": InputFrame,
    "branches": BranchesFrame,
    "skills": SkillsFrame,
    "error": ErrorFrame,
}
# Field names per frame class, in declaration order (``type`` first), for ``encode``.
_FIELDS: dict[type[ServerFrame], tuple[str, ...]] = {
    frame: tuple(field.name for field in dataclasses.fields(frame))
    for frame in SERVER_FRAMES.values()
}
# Frames whose optional run fields are left out when ``None`` (an error outside a run).
_OMIT_NONE: dict[type[ServerFrame], tuple[str, ...]] = {ErrorFrame: ("run", "seq")}


def encode(frame: ServerFrame) -> dict[str, Any]:
    """A frame as the JSON object clients receive (the one place frames are serialized)."""
    data = {name: getattr(frame, name) for name in _FIELDS[type(frame)]}
    for name in _OMIT_NONE.get(type(frame), ()):
        if data[name] is None:
            del data[name]
    return data


# One encoder for every frame: ``json.dumps`` with options builds a new one per call.
_ENCODE = json.JSONEncoder(ensure_ascii=False, default=str).encode


def encode_text(frame: ServerFrame | Mapping[str, Any]) -> str:
    """A frame (or an encoded frame) as JSON text."""
    data = frame if isinstance(frame, Mapping) else encode(frame)
    return _ENCODE(data)


# -- client frames ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSend:
    """A user message; starts a run (whitespace only: answers the history as it stands)."""

    type: Literal["send"] = "send"
    content: str
    images: tuple[str, ...] = ()
    attachments: tuple[str, ...] = ()
    nonce: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAbort:
    """Stop the running answer (what streamed so far is kept)."""

    type: Literal["abort"] = "abort"


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientCompact:
    """Fold older history into a summarized section now."""

    type: Literal["compact"] = "compact"
    focus: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientPendingPop:
    """Take the pending messages back (into the composer, to edit): seed 004's ``pendingPop``."""

    type: Literal["pending_pop"] = "pending_pop"


APPROVAL_DECISIONS = ("approve", "deny")


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientApprove:
    """Decide a held tool call: approve it (with edited ``arguments``, optionally) or deny it
    (``reason`` is what the model reads)."""

    type: Literal["approve"] = "approve"
    id: int
    decision: Literal["approve", "deny"]
    reason: str = ""
    arguments: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientAnswer:
    """Answer a question the model asked (``id``): one of its choices, or free text where
    allowed."""

    type: Literal["answer"] = "answer"
    id: int
    answer: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRespond:
    """Answer an MCP server's request for input (``id``): accept it (a form's ``content``, its
    fields' values), decline it, or cancel it (dismissed without choosing)."""

    type: Literal["respond"] = "respond"
    id: str
    action: InputAction
    content: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRegenerate:
    """Answer a turn again (``message``: its user message or one of its answer's): a new
    alternative; the earlier answer stays reachable."""

    type: Literal["regenerate"] = "regenerate"
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientEdit:
    """Send the user message ``message`` again as ``content``: a new alternative from it, with
    a new answer; the old message and what followed it stay reachable."""

    type: Literal["edit"] = "edit"
    message: str
    content: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientSelectBranch:
    """Choose alternative ``index`` (from 1) at the branch point ``point`` (a message id, or
    ``""``: the start): what the chat shows and the model sees from then on."""

    type: Literal["select_branch"] = "select_branch"
    point: str
    index: int


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientResync:
    """Ask for a fresh ``state`` frame (after a sequence gap)."""

    type: Literal["resync"] = "resync"


ClientFrame = (
    ClientSend
    | ClientAbort
    | ClientCompact
    | ClientPendingPop
    | ClientApprove
    | ClientAnswer
    | ClientRespond
    | ClientRegenerate
    | ClientEdit
    | ClientSelectBranch
    | ClientResync
)
CLIENT_FRAMES: dict[str, type[ClientFrame]] = {
    "send": ClientSend,
    "abort": ClientAbort,
    "compact": ClientCompact,
    "pending_pop": ClientPendingPop,
    "approve": ClientApprove,
    "answer": ClientAnswer,
    "respond": ClientRespond,
    "regenerate": ClientRegenerate,
    "edit": ClientEdit,
    "select_branch": ClientSelectBranch,
    "resync": ClientResync,
}


class FrameError(ValueError):
    """A client frame the server refuses; ``code`` goes into the error frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True, slots=True)
class Limits:
    """What a client frame may carry (from ``ORKESTREL`` settings at the front door)."""

    max_message_chars: int = _DEFAULT_MAX_MESSAGE_CHARS
    max_image_bytes: int = _DEFAULT_MAX_IMAGE_BYTES

    @classmethod
    def from_settings(cls) -> Limits:
        """The limits ``settings.ORKESTREL`` sets (``MAX_MESSAGE_CHARS``, ``MAX_IMAGE_BYTES``)."""
        config = getattr(settings, "ORKESTREL", {})
        return cls(
            config.get("MAX_MESSAGE_CHARS", _DEFAULT_MAX_MESSAGE_CHARS),
            config.get("MAX_IMAGE_BYTES", _DEFAULT_MAX_IMAGE_BYTES),
        )


def encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode: JSON's ``\\ud83d`` escape alone decodes to half an
    emoji, which no frame holding it could be sent with."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_image(value: object, index: int, max_bytes: int) -> str:
    """Validate one base64 image (PNG, JPEG, GIF or WebP by its bytes); return it."""
    if not isinstance(value, str):
        raise FrameError("invalid", f"images[{index}] must be a base64 string")
    if len(value) * 3 // 4 > max_bytes:
        raise FrameError("too_large", f"images[{index}] is larger than {max_bytes} bytes")
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise FrameError("invalid", f"images[{index}] is not valid base64") from None
    is_webp = raw[:4] == b"RIFF" and raw[8:12] == b"WEBP"
    if not (is_webp or raw.startswith(IMAGE_SIGNATURES)):
        raise FrameError("invalid", f"images[{index}] is not a PNG, JPEG, GIF or WebP image")
    return value


def check_attachments(value: object, *, prefix: str = "") -> tuple[str, ...]:
    """Validate a list of attachment ids (uploaded images, at most ``MAX_IMAGES``)."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise FrameError("invalid", f"{prefix}attachments must be a list of ids")
    if len(value) > MAX_IMAGES:
        raise FrameError("too_large", f"at most {MAX_IMAGES} images per message")
    if any(len(item) > 64 or not encodable(item) for item in value):
        raise FrameError("invalid", f"{prefix}attachments must be a list of ids")
    return tuple(value)


def check_message(
    content: object,
    images: object,
    limits: Limits,
    *,
    prefix: str = "",
    more: int = 0,
    blank: bool = False,
) -> tuple[str, tuple[str, ...]]:
    """Validate a user message's text and images (the ``send`` frame, the API's message);
    ``prefix`` names the frame in errors (``"send."``), ``more`` counts attached images;
    ``blank`` lets a whitespace-only text with no image through (a ``send`` continues)."""
    if not isinstance(content, str):
        raise FrameError("invalid", f"{prefix}content must be a string")
    if not encodable(content):
        raise FrameError("invalid", f"{prefix}content holds an unpaired surrogate")
    if len(content) > limits.max_message_chars:
        raise FrameError(
            "too_large", f"{prefix}content is longer than {limits.max_message_chars} characters"
        )
    listed = images or []
    if not isinstance(listed, list):
        raise FrameError("invalid", f"{prefix}images must be a list")
    if len(listed) + more > MAX_IMAGES:
        raise FrameError("too_large", f"at most {MAX_IMAGES} images per message")
    checked = tuple(check_image(item, i, limits.max_image_bytes) for i, item in enumerate(listed))
    if not blank and not content.strip() and not checked and not more:
        raise FrameError(
            "invalid", f"{prefix.rstrip('.') or 'a message'} needs content or an image"
        )
    return content, checked


def parse_client_frame(text: str | None, limits: Limits = Limits()) -> ClientFrame:  # noqa: B008
    """Validate one client frame; raise ``FrameError`` naming what is wrong."""
    if text is None:
        raise FrameError("invalid", "frames must be JSON text")
    if len(text) > MAX_FRAME_BYTES:
        raise FrameError("too_large", "frame too large")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        raise FrameError("invalid", "frame is not valid JSON") from None
    if not isinstance(data, Mapping):
        raise FrameError("invalid", "frame must be a JSON object")
    kind = data.get("type")
    if not isinstance(kind, str) or kind not in CLIENT_FRAMES:
        raise FrameError("unknown_type", f"unknown frame type {_short(kind)}")
    if kind == "send":
        attachments = check_attachments(data.get("attachments"), prefix="send.")
        # A whitespace-only send is a ``/continue`` (seed 004), as at every door.
        content, images = check_message(
            data.get("content"),
            data.get("images"),
            limits,
            prefix="send.",
            more=len(attachments),
            blank=True,
        )
        nonce = data.get("nonce")
        if nonce is not None and (
            not isinstance(nonce, str) or len(nonce) > 100 or not encodable(nonce)
        ):
            raise FrameError("invalid", "send.nonce must be a short string")
        return ClientSend(content=content, images=images, attachments=attachments, nonce=nonce)
    if kind == "compact":
        focus = data.get("focus")
        if focus is not None and (
            not isinstance(focus, str) or len(focus) > 2000 or not encodable(focus)
        ):
            raise FrameError("invalid", "compact.focus must be a string of at most 2000 characters")
        return ClientCompact(focus=focus or None)
    if kind == "abort":
        return ClientAbort()
    if kind == "pending_pop":
        return ClientPendingPop()
    if kind == "approve":
        return _approve_frame(data)
    if kind == "answer":
        return _answer_frame(data)
    if kind == "respond":
        return _respond_frame(data)
    if kind in ("regenerate", "edit", "select_branch"):
        return _branch_frame(kind, data, limits)
    return ClientResync()


def check_decision(
    decision: object, reason: object, arguments: object, *, prefix: str = ""
) -> tuple[Literal["approve", "deny"], str, dict[str, Any] | None]:
    """Validate a decision on a held call (the ``approve`` frame, the API's ``decide``)."""
    if decision == "approve" or decision == "deny":
        verdict: Literal["approve", "deny"] = decision
    else:
        raise FrameError("invalid", f"{prefix}decision must be 'approve' or 'deny'")
    if reason is None:
        reason = ""
    if not isinstance(reason, str) or len(reason) > 2000 or not encodable(reason):
        raise FrameError("invalid", f"{prefix}reason must be a string of at most 2000 characters")
    if arguments is not None:
        if not isinstance(arguments, dict):
            raise FrameError("invalid", f"{prefix}arguments must be a JSON object")
        if verdict == "deny":
            raise FrameError("invalid", f"{prefix}arguments are for an approval, not a denial")
        if not encodable(json.dumps(arguments, ensure_ascii=False)):
            raise FrameError("invalid", f"{prefix}arguments hold an unpaired surrogate")
    return verdict, reason.strip(), arguments


def _approve_frame(data: Mapping[str, Any]) -> ClientApprove:
    approval = data.get("id")
    if type(approval) is not int or approval < 1:
        raise FrameError("invalid", "approve.id must be an approval's id")
    decision, reason, arguments = check_decision(
        data.get("decision"), data.get("reason"), data.get("arguments"), prefix="approve."
    )
    return ClientApprove(id=approval, decision=decision, reason=reason, arguments=arguments)


def _answer_frame(data: Mapping[str, Any]) -> ClientAnswer:
    question = data.get("id")
    if type(question) is not int or question < 1:
        raise FrameError("invalid", "answer.id must be a question's id")
    answer = data.get("answer")
    if not isinstance(answer, str) or len(answer) > 10_000 or not encodable(answer):
        raise FrameError("invalid", "answer.answer must be a string of at most 10000 characters")
    return ClientAnswer(id=question, answer=answer)


def check_response(
    action: object, content: object, *, prefix: str = ""
) -> tuple[InputAction, dict[str, Any] | None]:
    """Validate an answer to a request for input (the ``respond`` frame, the API's body); the
    content's fit to the server's form is the run's to check."""
    if action == "accept" or action == "decline" or action == "cancel":
        chosen: InputAction = action
    else:
        raise FrameError("invalid", f"{prefix}action must be 'accept', 'decline' or 'cancel'")
    if content is None:
        return chosen, None
    if not isinstance(content, dict):
        raise FrameError("invalid", f"{prefix}content must be a JSON object")
    if chosen != "accept":
        raise FrameError("invalid", f"{prefix}content goes with an accept, not a {chosen}")
    if not encodable(json.dumps(content, ensure_ascii=False)):
        raise FrameError("invalid", f"{prefix}content holds an unpaired surrogate")
    return chosen, content


def _respond_frame(data: Mapping[str, Any]) -> ClientRespond:
    request = data.get("id")
    if not isinstance(request, str) or not 0 < len(request) <= 64 or not encodable(request):
        raise FrameError("invalid", "respond.id must be a request's id")
    action, content = check_response(data.get("action"), data.get("content"), prefix="respond.")
    return ClientRespond(id=request, action=action, content=content)


def check_message_id(value: object, name: str, *, blank: bool = False) -> str:
    """Validate a message id a frame or request names (``blank``: ``""`` is allowed)."""
    if (
        not isinstance(value, str)
        or len(value) > 255
        or not encodable(value)
        or not (value or blank)
    ):
        raise FrameError("invalid", f"{name} must be a message id")
    return value


def _branch_frame(
    kind: str, data: Mapping[str, Any], limits: Limits
) -> ClientRegenerate | ClientEdit | ClientSelectBranch:
    if kind == "select_branch":
        point = check_message_id(data.get("point"), "select_branch.point", blank=True)
        index = data.get("index")
        if type(index) is not int or index < 1:
            raise FrameError("invalid", "select_branch.index must be an alternative's number")
        return ClientSelectBranch(point=point, index=index)
    message = check_message_id(data.get("message"), f"{kind}.message")
    if kind == "regenerate":
        return ClientRegenerate(message=message)
    content, _ = check_message(data.get("content"), None, limits, prefix="edit.")
    return ClientEdit(message=message, content=content)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
