"""One ``tools/call`` at ``/mcp``: an ordinary run of a conversation (``origin`` ``mcp``),
started and waited for through the run service, answered once it settled.

A run that pauses on held calls is answered by the client where it can (``approvals``), and
the answer follows the runs that go on after the decisions: its text is theirs together, its
usage their sum.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from mcp.server import ServerRequestContext
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.types import (
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ElicitResult,
    InputRequiredResult,
)
from mcp.types.version import MODERN_PROTOCOL_VERSIONS

from conversations.approvals import ApprovalRefused, Decision, pending_approvals
from conversations.models import Conversation, Run
from conversations.questions import QuestionRefused, pending_questions
from orkestrel.db import in_thread
from orkestrel.protocol import ApprovalPayload, QuestionPayload

from ..runs import ConversationSeed, RunHandle, RunRecord, run_service
from ..runs import questions as answering
from ..runs.errors import (
    AwaitingApproval,
    Busy,
    ProfileForbidden,
    StartFailed,
    TooManyRuns,
    UnknownProfile,
)
from ..runtime.spec import ModelUnavailable
from ..usage.charge import KeyRef, charge_key
from ..usage.enforcement import QuotaExceeded
from .access import CALLER, Caller
from .approvals import (
    FORM_SCHEMA,
    Hold,
    can_answer,
    decision_of,
    elicit_request,
    elicitation,
    held_calls,
    input_key,
    waiting_text,
)
from .questions import (
    answer_of,
    asked_text,
    question_form,
    question_key,
    question_request,
    run_questions,
)
from .tools import (
    Ask,
    ToolRefused,
    answer,
    conversation_check,
    parse_ask,
    refused,
    usable_slug,
    usage_sum,
)

__all__ = ["call_tool", "caller_of"]

Context = ServerRequestContext[Any, Any]
# How long a decided run may take to go on (its next run is started by the decision itself:
# this only covers a decision whose run another process resumes).
NEXT_RUN_SECONDS = 30.0
NEXT_RUN_POLL = (0.02, 0.5)
# How long a form sent during a call (revisions before 2026-07-28) may wait for the person:
# then the call answers what still waits (it stays answerable in the chat and the API)
# rather than holding the request open for ever.
FORM_SECONDS = 600.0


def caller_of(ctx: Context) -> Caller:
    """The key's user the gate left on the request (an MCP error if there is none)."""
    scope = getattr(ctx.request, "scope", None)
    caller = scope.get(CALLER) if isinstance(scope, dict) else None
    if not isinstance(caller, Caller):
        raise MCPError(code=INVALID_REQUEST, message="The request carries no API key.")
    return caller


async def call_tool(ctx: Context, params: CallToolRequestParams) -> Any:
    """Run the agent ``params.name`` on the call's message; its answer, or why not."""
    caller = caller_of(ctx)
    try:
        if params.request_state is not None:
            return await _answered(ctx, caller, params)
        if not caller.allows("run"):
            raise ToolRefused("scope", "This API key lacks the 'run' scope.")
        ask = parse_ask(params.arguments)
        if not caller.allows_profile(params.name) or not await in_thread(usable_slug)(
            caller.user_id, params.name
        ):
            # Unknown and forbidden alike: a tool that is not listed does not exist here.
            raise ToolRefused("unknown_tool", f"Unknown tool: {params.name!r}.")
        handle = await _start(caller, params.name, ask)
        return await _settle(ctx, caller, params.name, handle.conversation_id, (handle.id,))
    except ToolRefused as error:
        return refused(error.code, str(error))


async def _start(caller: Caller, slug: str, ask: Ask) -> RunHandle:
    seed = None
    if ask.conversation is None:
        conversation = str(uuid.uuid4())
        seed = ConversationSeed(profile=slug, origin=Conversation.Origin.MCP)
    else:
        conversation = await in_thread(conversation_check)(caller.user_id, ask.conversation, slug)
    # The run's usage is charged to the key (the usage ledger), and held to its quotas.
    charge_key(KeyRef(caller.key_id, ""))
    try:
        return await run_service.start(
            user_id=caller.user_id, conversation_id=conversation, content=ask.message, seed=seed
        )
    except (UnknownProfile, ProfileForbidden):
        raise ToolRefused("unknown_tool", f"Unknown tool: {slug!r}.") from None
    except QuotaExceeded as error:
        raise ToolRefused(error.code, str(error)) from None
    except AwaitingApproval:
        waiting = await in_thread(pending_approvals)(conversation)
        raise ToolRefused(
            "awaiting_approval",
            waiting_text(waiting, conversation, "Nothing was sent: the conversation is paused."),
        ) from None
    except Busy:
        raise ToolRefused(
            "conversation_busy",
            f"A reply is still running in conversation {conversation}: wait for it, then call "
            "again.",
        ) from None
    except TooManyRuns as error:
        raise ToolRefused("too_many_runs", str(error)) from None
    except ModelUnavailable as error:
        raise ToolRefused(error.code, str(error)) from None
    except StartFailed:
        raise ToolRefused(
            "profile_unavailable",
            "The agent could not be started; an operator must check its configuration.",
        ) from None


async def _settle(
    ctx: Context, caller: Caller, slug: str, conversation: str, runs: tuple[int, ...]
) -> CallToolResult | InputRequiredResult:
    """Wait for the latest of ``runs``; answer, or ask about the calls it holds and follow
    the run that goes on."""
    while True:
        run_id = runs[-1]
        await run_service.wait(run_id)
        record = await run_service.get(user_id=caller.user_id, run_id=run_id)
        if record.status not in PAUSED:
            return await _finished(caller, conversation, runs, record)
        # A question (``ask_user``) first, then the calls the same run holds, if any.
        questions = await in_thread(run_questions)(run_id)
        if questions:
            replied = await _ask_user(ctx, caller, slug, conversation, runs, questions)
            if replied is not None:
                return replied
            if not await in_thread(_paused)(run_id):
                runs = (*runs, await _next_run(conversation, run_id))
                continue
        held = await in_thread(held_calls)(run_id)
        if held:
            asked = await _ask(ctx, caller, slug, conversation, runs, held)
            if asked is not None:
                return asked
        runs = (*runs, await _next_run(conversation, run_id))


async def _ask(
    ctx: Context,
    caller: Caller,
    slug: str,
    conversation: str,
    runs: tuple[int, ...],
    held: list[ApprovalPayload],
) -> CallToolResult | InputRequiredResult | None:
    """Ask the client to decide the held calls: ``None`` once they are all decided (the run
    goes on), else what to answer now."""
    ids = [approval["id"] for approval in held]
    asked = can_answer(ctx.session.client_capabilities)
    if not asked or any(approval["approver"] != "owner" for approval in held):
        why = "A tool call of the agent needs a person's approval."
        return _waiting(held, conversation, why)
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return InputRequiredResult(
            input_requests={
                input_key(approval): elicit_request(approval, slug) for approval in held
            },
            request_state=Hold(conversation, runs, tuple(ids)).encode(),
        )
    # Earlier revisions: the client answers a request sent during this call.
    decisions: dict[int, Decision | None] = {}
    for approval in held:
        form = elicitation(approval, slug)
        try:
            result = await _form(ctx, form.message, FORM_SCHEMA)
        except NoBackChannelError:
            return _waiting(held, conversation, "This connection cannot ask for a decision.")
        decisions[approval["id"]] = decision_of(result)
    return await _decide(caller, conversation, ids, decisions)


async def _form(ctx: Context, message: str, schema: Any) -> ElicitResult | None:
    """The person's answer to a form sent during the call; ``None`` when none came within
    ``FORM_SECONDS`` (what it asked keeps waiting)."""
    try:
        async with asyncio.timeout(FORM_SECONDS):
            return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    except TimeoutError:
        return None


async def _answered(
    ctx: Context, caller: Caller, params: CallToolRequestParams
) -> CallToolResult | InputRequiredResult:
    """The retry of a call that asked for decisions: take them, then follow the run on."""
    assert params.request_state is not None
    try:
        hold = Hold.decode(params.request_state)
    except (ValueError, KeyError, TypeError):
        raise ToolRefused(
            "invalid_state", "The call's requestState is not one this server sent."
        ) from None
    responses = params.input_responses or {}
    if hold.questions:
        answers: dict[int, str | None] = {}
        for question in hold.questions:
            response = responses.get(f"question-{question}")
            answers[question] = answer_of(response if isinstance(response, ElicitResult) else None)
        left = await _answer(caller, hold.conversation, hold.questions, answers)
        if left is not None:
            return left
        if await in_thread(_paused)(hold.runs[-1]):
            # Calls of the same run wait too: ask about them now.
            return await _settle(ctx, caller, params.name, hold.conversation, hold.runs)
        runs = (*hold.runs, await _next_run(hold.conversation, hold.runs[-1]))
        return await _settle(ctx, caller, params.name, hold.conversation, runs)
    decisions: dict[int, Decision | None] = {}
    for approval in hold.approvals:
        response = responses.get(f"approval-{approval}")
        decisions[approval] = decision_of(response if isinstance(response, ElicitResult) else None)
    left = await _decide(caller, hold.conversation, hold.approvals, decisions)
    if left is not None:
        return left
    runs = (*hold.runs, await _next_run(hold.conversation, hold.runs[-1]))
    return await _settle(ctx, caller, params.name, hold.conversation, runs)


async def _decide(
    caller: Caller,
    conversation: str,
    approvals: Sequence[int],
    decisions: Mapping[int, Decision | None],
) -> CallToolResult | None:
    """Take the client's decisions (through the run service); ``None`` when no call is left
    waiting, else the ``isError`` result naming the ones that are."""
    for approval in approvals:
        decision = decisions.get(approval)
        if decision is None:
            continue
        try:
            await run_service.decide(
                user_id=caller.user_id,
                username=caller.username,
                approval_id=approval,
                decision=decision,
            )
        except LookupError:
            raise ToolRefused("unknown_approval", f"No approval {approval} of yours.") from None
        except ApprovalRefused as error:
            if error.code != "decided":
                raise ToolRefused("approval_refused", str(error)) from None
            # Decided meanwhile, in the chat or the API: that decision stands.
    waiting = [
        approval
        for approval in await in_thread(pending_approvals)(conversation)
        if approval["id"] in approvals
    ]
    if waiting:
        return _waiting(waiting, conversation, "A call was left undecided.")
    return None


PAUSED = (Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_INPUT)


def _paused(run_id: int) -> bool:
    return Run.objects.filter(pk=run_id, status__in=PAUSED).exists()


async def _ask_user(
    ctx: Context,
    caller: Caller,
    slug: str,
    conversation: str,
    runs: tuple[int, ...],
    questions: list[QuestionPayload],
) -> CallToolResult | InputRequiredResult | None:
    """Ask the client the model's questions: ``None`` once they are all answered, else what
    to answer now."""
    ids = [question["id"] for question in questions]
    if not can_answer(ctx.session.client_capabilities):
        return _unanswered(questions, conversation, "The agent asks you a question.")
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        return InputRequiredResult(
            input_requests={
                question_key(question): question_request(question, slug) for question in questions
            },
            request_state=Hold(conversation, runs, (), questions=tuple(ids)).encode(),
        )
    answers: dict[int, str | None] = {}
    for question in questions:
        form = question_form(question, slug)
        try:
            result = await _form(ctx, form.message, form.requested_schema)
        except NoBackChannelError:
            return _unanswered(questions, conversation, "This connection cannot ask.")
        answers[question["id"]] = answer_of(result)
    return await _answer(caller, conversation, ids, answers)


async def _answer(
    caller: Caller,
    conversation: str,
    questions: Sequence[int],
    answers: Mapping[int, str | None],
) -> CallToolResult | None:
    """Give the client's answers (through the one seam the chat uses); ``None`` when no
    question is left waiting, else the ``isError`` result naming the ones that are."""
    for question in questions:
        answer = answers.get(question)
        if answer is None:
            continue
        try:
            await answering.answer(
                run_service.manager,
                user_id=caller.user_id,
                username=caller.username,
                question_id=question,
                answer=answer,
            )
        except LookupError:
            raise ToolRefused("unknown_question", f"No question {question} of yours.") from None
        except QuestionRefused as error:
            if error.code != "answered":
                raise ToolRefused("answer_refused", str(error)) from None
            # Answered meanwhile, in the chat or the API: that answer stands.
    waiting = [
        question
        for question in await in_thread(pending_questions)(conversation)
        if question["id"] in questions
    ]
    if waiting:
        return _unanswered(waiting, conversation, "A question was left unanswered.")
    return None


def _unanswered(
    questions: Sequence[QuestionPayload], conversation: str, why: str
) -> CallToolResult:
    return refused(
        "input_required",
        asked_text(questions, conversation, why),
        conversation=conversation,
        questions=[question["id"] for question in questions],
    )


def _waiting(held: Sequence[ApprovalPayload], conversation: str, why: str) -> CallToolResult:
    return refused(
        "approval_required",
        waiting_text(held, conversation, why),
        conversation=conversation,
        approvals=[approval["id"] for approval in held],
    )


def _later_run(conversation: str, after: int) -> int | None:
    return (
        Run.objects.filter(conversation_id=conversation, pk__gt=after)
        .order_by("pk")
        .values_list("pk", flat=True)
        .first()
    )


async def _next_run(conversation: str, after: int) -> int:
    """The run that went on after the paused run ``after`` (the decision started it)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + NEXT_RUN_SECONDS
    delay, longest = NEXT_RUN_POLL
    while (found := await in_thread(_later_run)(conversation, after)) is None:
        if loop.time() > deadline:
            raise ToolRefused(
                "not_resumed",
                f"The agent did not go on after the decisions; see conversation {conversation} "
                "in the chat.",
            )
        await asyncio.sleep(delay)
        delay = min(delay * 2, longest)
    return found


async def _finished(
    caller: Caller, conversation: str, runs: tuple[int, ...], record: RunRecord
) -> CallToolResult:
    """The answer of a settled run (with the text and usage of the runs before it, when it
    went on after approvals)."""
    earlier = [await run_service.get(user_id=caller.user_id, run_id=run) for run in runs[:-1]]
    records = [*earlier, record]
    if record.status == Run.Status.ERROR:
        return refused(
            "run_failed",
            f"The agent's run failed: {record.error or 'an error'}.",
            conversation=conversation,
            run=record.id,
        )
    if record.status == Run.Status.INTERRUPTED:
        return refused(
            "run_interrupted",
            "The agent's run was interrupted before it answered (its server stopped); call "
            f"again with conversation {conversation} to go on.",
            conversation=conversation,
            run=record.id,
        )
    text = "\n\n".join(run.content.strip() for run in records if run.content.strip())
    return answer(
        text,
        conversation=conversation,
        run=record.id,
        status=record.status,
        usage=usage_sum([run.usage for run in records]),
    )
