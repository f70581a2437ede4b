"""The run's database side: opening, checkpointing and finishing ``Run`` rows, and recovery."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, connection, transaction
from django.db.models import Q
from django.utils import timezone

from conversations.approvals import Decided, take_decisions
from conversations.branches import Redo, start_alternative
from conversations.documents import edited_documents
from conversations.models import Conversation, Run
from conversations.pending import has_pending, merged, take_pending
from conversations.questions import take_answers
from conversations.services import UNFINISHED, context_readout, fill_tool_results
from conversations.stores import DjangoConversationStore
from orkestrel.core import (
    AgentResult,
    ConversationSnapshot,
    Message,
    TokenUsage,
)
from orkestrel.protocol import MessagePayload, UsagePayload, usage_payload
from orkestrel.statements import Query, insert, prep, update
from workspaces.stores import DjangoWorkspaceStore

from ..runtime.client_tools import PENDING_CONTENT
from ..runtime.overrides import RunOverrides
from ..runtime.spec import (
    LoadedSession,
    RuntimeSpec,
    enabled_profile,
    load_spec,
    profile_usable,
)
from ..runtime.usage import usage_columns
from .errors import (
    AwaitingApproval,
    Busy,
    NothingPending,
    NothingToContinue,
    NotPaused,
    ProfileForbidden,
    ToolClash,
    TooManyRuns,
    UnknownProfile,
    UnknownToolCall,
)
from .interruptions import ends_interrupted, interrupt, interrupted_frame
from .payloads import committed_payload

__all__ = [
    "TITLE_LENGTH",
    "ConversationSeed",
    "RunLimits",
    "RunRecord",
    "called_model",
    "close_run",
    "owned_run",
    "run_conversation",
    "run_going",
    "refuse_when_idle",
    "stored_events",
    "finish_run",
    "prepare_run",
    "retryable",
    "save_checkpoints",
    "save_events",
]

TITLE_LENGTH = 60


def save_checkpoints(rows: list[tuple[int, str, str]], alive: Sequence[int] = ()) -> None:
    """Save every active run's in-flight text in one ``UPDATE`` (per chunk of rows).

    One statement, not ``executemany`` nor ``bulk_update``: the database thread shares the GIL
    with the event loop, and every statement it steps through hands the GIL back and forth
    (a ``bulk_update`` also compiles its ``CASE`` in Python). With 200 runs streaming, 200
    handoffs each second stalled every stream for tens of milliseconds.

    ``alive`` are the ids of every run this process holds: their heartbeat moves (one more
    statement), so no other process takes them for dead.
    """
    table = connection.ops.quote_name(Run._meta.db_table)
    limit = connection.features.max_query_params or 5_000
    size = max(1, limit // 5)
    with transaction.atomic(), connection.cursor() as cursor:
        if alive:
            Run.objects.filter(id__in=list(alive)).update(heartbeat=timezone.now())
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            cases = " ".join(["WHEN %s THEN %s"] * len(chunk))
            marks = ", ".join(["%s"] * len(chunk))
            params: list[int | str] = []
            for run_id, content, _ in chunk:
                params += [run_id, content]
            for run_id, _, thinking in chunk:
                params += [run_id, thinking]
            params += [run_id for run_id, _, _ in chunk]
            # A run that settled meanwhile keeps its final text: a checkpoint taken while its
            # settle was committing sees the answer claimed by its message (no reasoning left).
            params += list(ACTIVE)
            cursor.execute(
                f"UPDATE {table} SET content = CASE id {cases} END, "
                f"thinking = CASE id {cases} END WHERE id IN ({marks}) "
                f"AND status IN ({', '.join(['%s'] * len(ACTIVE))})",
                params,
            )


@dataclass(frozen=True, slots=True)
class ConversationSeed:
    """A conversation to create with its run: a request that brings its own history."""

    profile: str  # an enabled profile's slug
    origin: str
    history: tuple[Message, ...] = ()
    title: str = ""


@dataclass(frozen=True, slots=True)
class RunLimits:
    """What starting a run checks: the user's runs at once (0: no cap), and when a run whose
    holder stopped beating counts as dead (seconds)."""

    per_user: int = 0
    stale: float = 10.0


@dataclass(frozen=True, slots=True)
class RunRecord:
    """A run as stored: what the API's run body shows."""

    id: int
    conversation_id: str
    status: str
    stop_reason: str
    error: str
    content: str
    thinking: str
    usage: UsagePayload
    created: datetime
    started: datetime | None
    finished: datetime | None
    # ``<endpoint>/<model>`` as called, and the model the provider reported answering.
    model: str = ""
    response_model: str = ""

    @classmethod
    def of(cls, run: Run) -> RunRecord:
        """The record of a ``Run`` row (its stored frames need not be loaded)."""
        return cls(
            id=run.id,
            conversation_id=str(run.conversation_id),
            status=run.status,
            stop_reason=run.stop_reason,
            error=run.error,
            content=run.content,
            thinking=run.thinking,
            usage=usage_payload(run.token_usage(), run.cost),
            created=run.created,
            started=run.started,
            finished=run.finished,
            model=run.model,
            response_model=run.response_model,
        )


_BIGINT = (-(2**63), 2**63 - 1)
# Every field but the stored frames (which may be megabytes), as ``defer("events")``.
_RUN_FIELDS = tuple(f for f in Run._meta.concrete_fields if f.name != "events")
# Fixed SQL (``orkestrel.statements``): every API start answers with it, and every read.
_OWNED_RUN = Query(
    lambda n: (
        f"SELECT {', '.join(n.field(f, 'r') for f in _RUN_FIELDS)} FROM {n.table(Run)} r "
        f"INNER JOIN {n.table(Conversation)} c "
        f"ON {n.column(Run, 'conversation', 'r')} = {n.column(Conversation, 'id', 'c')} "
        f"WHERE {n.column(Run, 'id', 'r')} = %s AND {n.column(Conversation, 'owner', 'c')} = %s"
    ),
    _RUN_FIELDS,
)


def owned_run(user_id: int, run_id: int) -> RunRecord | None:
    """The run ``run_id`` if it is on one of the user's conversations, else ``None``."""
    if not _BIGINT[0] <= run_id <= _BIGINT[1]:
        return None  # as the ORM answers an id no integer column holds: nothing, not an error
    found = _OWNED_RUN.rows([run_id, user_id])
    if not found:
        return None
    run = Run.from_db(connection.alias, [f.attname for f in _RUN_FIELDS], found[0])
    return RunRecord.of(run)


def retryable(record: RunRecord) -> str | None:
    """Why ``record`` cannot be retried (``None``: it can): only the latest run of its
    conversation, and only one that failed, stopped or was interrupted."""
    if record.status not in UNFINISHED:
        return "only a failed, stopped or interrupted run can be retried"
    latest = (
        Run.objects.filter(conversation_id=record.conversation_id)
        .order_by("-created", "-id")
        .values_list("id", flat=True)
        .first()
    )
    return None if latest == record.id else "a later run followed this one"


def run_conversation(run_id: int) -> str:
    """The id of the conversation run ``run_id`` belongs to."""
    return str(Run.objects.filter(id=run_id).values_list("conversation_id", flat=True).get())


def stored_events(run_id: int) -> list[dict[str, Any]] | None:
    """A settled run's stored frames; ``None`` while the run is still going."""
    row = Run.objects.filter(id=run_id).values("status", "events").first()
    if row is None:
        return []
    if row["status"] in ("queued", "running"):
        return None
    events = list(row["events"] or [])
    if row["status"] == Run.Status.INTERRUPTED and not (events and ends_interrupted(events[-1])):
        # Closed before its ``finish`` was stored with it (an earlier release): made up here.
        events.append(_interrupted_end(run_id, len(events) + 1))
    return events


def _interrupted_end(run_id: int, seq: int) -> dict[str, Any]:
    run = Run.objects.select_related("conversation__owner").get(id=run_id)
    meter = context_readout(user=run.conversation.owner, conversation_id=run.conversation_id)
    return interrupted_frame(run_id, seq, run.content, run.thinking, meter)


def save_events(run_id: int, frames: list[dict[str, Any]]) -> None:
    """Store a settled run's frames, for followers that come after it left memory."""
    update(Run, {"id": run_id}, {"events": frames})


def close_run(run_id: int, conversation_id: str, frames: list[dict[str, Any]]) -> bool:
    """A settled run's last hop: store its frames, and say whether messages wait for the
    conversation's next run (one hop, not two: 200 runs ending at once queue on this thread)."""
    save_events(run_id, frames)
    return has_pending(conversation_id)


def finish_run(
    run_id: int,
    status: str,
    result: AgentResult | None,
    error: str,
    stop: str | None = None,
    partial: tuple[str, str] | None = None,
    response_model: str = "",
) -> None:
    """Settle the ``Run`` row; ``stop`` overrides the result's reason (``tool_calls``); a
    failed run keeps its ``partial`` (content, thinking); ``response_model`` is the model
    the provider reported answering (blank: it named none)."""
    fields: dict[str, Any] = {"status": status, "finished": timezone.now(), "error": error}
    if response_model:
        fields["response_model"] = response_model[:300]
    if partial is not None:
        fields.update(content=partial[0], thinking=partial[1])
    if result is not None:
        fields.update(
            stop_reason=stop or result.stop,
            content=result.content,
            thinking=result.thinking or "",
        )
        if result.usage is not None:
            # Its cost is written beside the conversation's, where the prices are known.
            fields.update(usage_columns(result.usage))
    update(Run, {"id": run_id}, fields)


ACTIVE = ("queued", "running")


class _SlotTaken(Exception):
    """The conversation's run slot is held (the unique constraint refused the insert)."""


def _open_run(
    conversation_id: str,
    user_id: int,
    holder: str,
    limits: RunLimits,
    request: dict[str, Any] | None = None,
    model: str = "",
) -> int:
    """Open the ``Run`` row: the conversation's one run slot, in every process; ``model`` is
    the ``<endpoint>/<model>`` it calls.

    The database's partial unique constraint decides a race, with no read first: the common
    start costs one insert. ``TooManyRuns`` when the user has more than ``limits.per_user``.
    """
    now = timezone.now()
    run = Run(
        conversation_id=conversation_id,
        status="running",
        started=now,
        holder=holder,
        heartbeat=now,
        request=request,
        model=model,
    )
    try:
        insert(run)
    except IntegrityError:
        raise _SlotTaken from None
    if limits.per_user:
        cutoff = now - timedelta(seconds=limits.stale)
        params = [user_id, *ACTIVE, prep(Run, "heartbeat", cutoff)]
        going = _GOING.rows(params)[0][0]
        if going > limits.per_user:
            raise TooManyRuns(
                f"you have {going - 1} replies running; wait for one to finish "
                f"(at most {limits.per_user} at once)"
            )
    return run.pk


# The user's runs going with a live heartbeat (the per-user cap), in fixed SQL: every start
# counts them.
_GOING = Query(
    lambda n: (
        f"SELECT COUNT(*) FROM {n.table(Run)} r INNER JOIN {n.table(Conversation)} c "
        f"ON {n.column(Run, 'conversation', 'r')} = {n.column(Conversation, 'id', 'c')} "
        f"WHERE {n.column(Conversation, 'owner', 'c')} = %s "
        f"AND {n.column(Run, 'status', 'r')} IN ({', '.join(['%s'] * len(ACTIVE))}) "
        f"AND {n.column(Run, 'heartbeat', 'r')} >= %s"
    )
)


def refuse_when_idle(conversation_id: str, user_id: int, stale: float) -> None:
    """With no run going (a message sent now would wait for none), raise the refusal a
    start would meet now (``ModelUnavailable``...) rather than queue what nothing answers."""
    if not run_going(conversation_id, stale):
        load_spec(conversation_id, user_id)


def run_going(conversation_id: str, stale: float) -> bool:
    """Whether a run of the conversation is going in any process: queued for a worker,
    running with a live heartbeat (within ``stale`` seconds), or paused for approvals. Its
    history is that run's to change (a ``/compact`` waits)."""
    cutoff = timezone.now() - timedelta(seconds=stale)
    return (
        Run.objects.filter(conversation_id=conversation_id)
        .filter(
            Q(status=Run.Status.QUEUED)
            | Q(status=Run.Status.RUNNING, heartbeat__gte=cutoff)
            | Q(status__in=(Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_INPUT))
        )
        .exists()
    )


def _free_stale_slot(conversation_id: str, stale: float) -> bool:
    """Close the conversation's active runs whose holder stopped beating; whether any was."""
    cutoff = timezone.now() - timedelta(seconds=stale)
    closed = False
    with transaction.atomic():
        for run in Run.objects.filter(conversation_id=conversation_id, status__in=ACTIVE):
            if run.heartbeat is None or run.heartbeat < cutoff:
                # Its ``finish`` is stored for replays; the run that starts now is what live
                # followers see next.
                interrupt(run)
                closed = True
    return closed


def _title(content: str) -> str:
    return " ".join(content.split())[:TITLE_LENGTH]


def _name(conversation_id: str, content: str, title: str) -> str:
    """Name an untitled conversation after its first message; the title to show."""
    if not title:
        # An untitled conversation is named after its first message, as chat apps do.
        named = _title(content)
        if named and update(Conversation, {"id": conversation_id, "title": ""}, {"title": named}):
            return named
        # Named meanwhile (a rename in another tab): show what is stored.
        title = Conversation.objects.filter(id=conversation_id).values_list("title", flat=True)[0]
    return title


def _profile_id(slug: str, user_id: int) -> int:
    found = enabled_profile(slug)
    if found is None:
        raise UnknownProfile(f"no agent profile {slug!r}")
    profile, revision = found
    if not profile_usable(profile, user_id, revision):
        raise ProfileForbidden(f"you may not use the agent profile {slug!r}")
    return profile.pk


def prepare_run(
    conversation_id: str,
    user_id: int,
    message: Message | None,
    holder: str,
    limits: RunLimits,
    *,
    seed: ConversationSeed | None = None,
    overrides: RunOverrides | None = None,
    results: Mapping[str, str] | None = None,
    from_pending: bool = False,
    resume: int | None = None,
    redo: Redo | None = None,
) -> tuple[LoadedSession, int, TokenUsage, MessagePayload | None, str, tuple[Decided, ...]]:
    """Take the run slot, load the session and store the user message, in one transaction.

    With a ``seed`` the conversation is created first, with its history; ``results`` (call id
    to output) fill in the client tool calls the conversation waits for; without a
    ``message`` the run answers the history as it stands (a tool result came last). A refused
    start (``Busy``, ``TooManyRuns``, ``ToolClash``, ``UnknownProfile``, ``UnknownToolCall``)
    stores nothing. ``from_pending`` makes the message of the conversation's pending messages,
    merged (``NothingPending`` when there are none). ``resume`` is a run paused for approvals
    whose calls are all decided: its decisions come back, for the new run to apply
    (``NotPaused`` when it goes on already). ``redo`` makes the run a new alternative: of a
    turn's answer (``message`` is ``None``), or of an edited user message (``message`` is the
    edit, with the original's images); ``NoSuchBranch``, ``NotBranchable`` refuse it. Few
    statements on
    purpose: each one hands the GIL to the event loop and waits to get it back, so under load
    a start's wall time grows with its statement count.
    """
    request = dict(overrides.request) if overrides is not None and overrides.request else None
    clients = overrides.client_names if overrides is not None else frozenset()
    decisions: tuple[Decided, ...] = ()
    if seed is not None:
        # A new conversation: nothing to wait for or read back, all of it is known here.
        with transaction.atomic():
            loaded, run_id = _seed_run(
                conversation_id, user_id, message, holder, limits, seed, request
            )
            _check_clash(loaded.spec, clients)
        title = loaded.spec.title
    else:
        for attempt in range(2):
            try:
                with transaction.atomic():
                    store = DjangoConversationStore(owner=user_id)
                    if from_pending:
                        message = merged(take_pending(conversation_id))
                        if message is None:
                            raise NothingPending(conversation_id)
                    if results:
                        missing = fill_tool_results(conversation_id, results, PENDING_CONTENT)
                        if missing is not None:
                            raise UnknownToolCall(missing)
                    if resume is not None:
                        # Closes the paused run first: its slot is the one opened below.
                        taken = take_decisions(resume)
                        if taken is None:
                            raise NotPaused(resume)
                        decisions = (*taken, *take_answers(resume))
                    spec = load_spec(conversation_id, user_id)
                    _check_clash(spec, clients)
                    run_id = _open_run(
                        conversation_id, user_id, holder, limits, request, called_model(spec)
                    )
                    if redo is not None:
                        # The slot is this run's now: nothing else branches or answers meanwhile.
                        kept = edited_documents(conversation_id, redo)
                        images = start_alternative(conversation_id, redo, run_id)
                        if message is not None and images and not message.images:
                            message = replace(message, images=images)
                        if message is not None and kept and not message.documents:
                            message = replace(message, documents=kept)
                    stored: ConversationSnapshot | None
                    if message is not None:
                        # An append, not a ``set``: the history is read under the append's lock.
                        stored = store.append_sync(conversation_id, message)
                        title = _name(conversation_id, message.content, spec.title)
                    else:
                        stored = store.get_sync(conversation_id)
                        if stored is None or not (stored["messages"] or stored["sections"]):
                            raise NothingToContinue("nothing to continue yet: say something")
                        title = spec.title
                    workspace = DjangoWorkspaceStore(owner=user_id).get_sync(spec.workspace_id)
                break
            except _SlotTaken:
                # Held: by a live run (busy), or by one whose process died (closed, then
                # retried).
                if attempt or not _free_stale_slot(conversation_id, limits.stale):
                    waiting = _awaiting(conversation_id)
                    if waiting == Run.Status.AWAITING_INPUT:
                        raise AwaitingApproval(
                            "the agent waits for your answer to its question"
                        ) from None
                    if waiting:
                        raise AwaitingApproval(
                            "a tool call in this conversation waits for your approval"
                        ) from None
                    raise Busy("a reply is still running in this conversation") from None
        loaded = LoadedSession(spec, stored, workspace)
    payload = committed_payload([message])[0] if message is not None else None
    return loaded, run_id, loaded.spec.usage, payload, title, decisions


def _awaiting(conversation_id: str) -> str | None:
    """The status of the conversation's paused run, if one waits for a person."""
    return (
        Run.objects.filter(
            conversation_id=conversation_id,
            status__in=(Run.Status.AWAITING_APPROVAL, Run.Status.AWAITING_INPUT),
        )
        .values_list("status", flat=True)
        .first()
    )


def called_model(spec: RuntimeSpec) -> str:
    """The ``<endpoint>/<model>`` a run of ``spec`` calls (what its ``Run`` records)."""
    return f"{spec.endpoint.name}/{spec.model_name}"


def _check_clash(spec: RuntimeSpec, clients: frozenset[str]) -> None:
    clash = clients & {tool.name for tool in spec.tools}
    if clash:
        raise ToolClash(list(clash))


def _seed_run(
    conversation_id: str,
    user_id: int,
    message: Message | None,
    holder: str,
    limits: RunLimits,
    seed: ConversationSeed,
    request: dict[str, Any] | None,
) -> tuple[LoadedSession, int]:
    """Create the seeded conversation and open its run (its slot is free: it is new)."""
    history = (*seed.history, message) if message is not None else seed.history
    title = seed.title or (_title(message.content) if message is not None else "")
    stored, workspace_id = DjangoConversationStore(owner=user_id).create_sync(
        conversation_id,
        history,
        profile_id=_profile_id(seed.profile, user_id),
        origin=seed.origin,
        title=title,
    )
    spec = load_spec(conversation_id, user_id)
    try:
        run_id = _open_run(conversation_id, user_id, holder, limits, request, called_model(spec))
    except _SlotTaken:
        raise Busy("a reply is still running in this conversation") from None
    return LoadedSession(spec, stored, {"id": workspace_id, "files": []}), run_id
