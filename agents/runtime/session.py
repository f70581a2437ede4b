"""A chat session: one conversation's live agent, built from rows and persisted as it goes."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from django.conf import settings
from django.db import transaction

from conversations.models import AuthorityDecision, Run, ToolFailure
from conversations.stores import DjangoConversationStore
from orkestrel.core import (
    Agent,
    Authority,
    ConversationManager,
    ConversationSnapshot,
    InstructionManager,
    RunOptions,
    ThinkingLevel,
    TokenUsage,
    ToolCall,
    ToolResult,
    create_budget,
    estimate_messages,
)
from orkestrel.core import (
    AuthorityDecision as Decision,
)
from orkestrel.core.dispatch import READ_ONLY_ZONE
from orkestrel.db import in_thread
from orkestrel.statements import update
from workspaces.stores import DjangoWorkspaceStore

from ..authority import PolicyAuthority
from ..models import (
    AuthorityRule,
)
from ..usage.charge import KeyRef, current_key
from ..usage.ledger import record
from .approvals import ApprovalGate
from .budgets import run_budget
from .client_tools import ClientToolAuthority, Handoff, client_tool
from .mcp_input import InputBridge, input_seconds
from .mcp_tools import McpToolSource
from .overrides import RunOverrides
from .providers import provider_for
from .questions import QuestionBridge
from .registry import ToolContext
from .reports import ToolReports
from .run_tools import Gates, RunTools
from .session_workspaces import SessionWorkspaces, WorkspaceChanges
from .sources import RunSources, usable_servers
from .spec import LoadedSession, RuntimeSpec, load_session
from .summarizer import make_summarizer
from .toolset import RowTools
from .usage import UsageRecorder

__all__ = ["ChatSession"]

logger = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass
class DecisionLog:
    """Authority decisions and failed tool calls of a run, written at its commit points."""

    pending: list[tuple[ToolCall, Decision, AuthorityRule | None]] = field(default_factory=list)
    # Calls whose tool failed (not denied): their cards must still read as errors after reload.
    failures: list[tuple[ToolCall, str]] = field(default_factory=list)

    def record(self, call: ToolCall, decision: Decision, rule: AuthorityRule | None) -> None:
        self.pending.append((call, decision, rule))

    def record_refusal(self, call: ToolCall, decision: Decision) -> None:
        """A call read-only mode refused (the authority's own denials arrive by ``record``)."""
        if decision.zone == READ_ONLY_ZONE:
            self.pending.append((call, decision, None))

    def record_result(self, call: ToolCall, result: ToolResult) -> None:
        if result.outcome.kind == "error" and result.error is not None:
            self.failures.append((call, result.error))

    def drain(self) -> list[tuple[ToolCall, Decision, AuthorityRule | None]]:
        pending, self.pending = self.pending, []
        return pending

    def drain_failures(self) -> list[tuple[ToolCall, str]]:
        failures, self.failures = self.failures, []
        return failures


@dataclass(frozen=True, slots=True)
class Changes:
    """What one commit writes, captured on the event loop."""

    snapshot: ConversationSnapshot | None
    files: list[WorkspaceChanges]
    decisions: list[tuple[ToolCall, Decision, AuthorityRule | None]]
    failures: list[tuple[ToolCall, str]]
    usage: TokenUsage | None


class ChatSession:
    """The live agent of one conversation plus what persists it."""

    def __init__(
        self,
        spec: RuntimeSpec,
        agent: Agent,
        conversations: ConversationManager,
        workspaces: SessionWorkspaces,
        decisions: DecisionLog,
        overrides: RunOverrides | None = None,
        gate: ApprovalGate | None = None,
        tools: RunTools | None = None,
        reports: ToolReports | None = None,
        questions: QuestionBridge | None = None,
        inputs: InputBridge | None = None,
    ) -> None:
        self.spec = spec
        self.agent = agent
        self.conversations = conversations
        self.workspaces = workspaces
        self.decisions = decisions
        self.overrides = overrides or RunOverrides()
        # The agent's tools: they say when calls start (and hold those the gate keeps).
        self.tools = tools or RunTools()
        # What the tools report on calls still running (the run shows it on their cards).
        self.reports = reports or ToolReports()
        # Set when the run may call the client's tools: it stops once it has.
        self.handoff: Handoff | None = (
            Handoff(agent, self.overrides.client_names) if self.overrides.client_tools else None
        )
        if self.handoff is not None:
            agent.scheduler = self.handoff
        # Set when a rule may ask a person: the run stops once a call waits for one.
        self.gate = gate
        if gate is not None:
            gate.agent = agent
            gate.then = agent.scheduler
            agent.scheduler = gate
        # Set when someone can answer the model's questions: the run stops once it asked.
        self.questions = questions
        if questions is not None:
            questions.agent = agent
            questions.then = agent.scheduler
            agent.scheduler = questions
        # The run's MCP servers' requests for the user's input (shown once a run attaches).
        self.inputs = inputs or InputBridge(
            spec.conversation_id, spec.user_id, timeout=input_seconds()
        )
        self.run_id: int | None = None
        # The API key the run's usage is charged to (its start's), and when it was built.
        self.key: KeyRef | None = None
        self.opened = time.monotonic()
        # The run's tool sources (``build`` sets them; none for a session built by hand).
        self.sources = RunSources(())
        agent.emitter.on("tool", decisions.record_result)

    @property
    def conversation_id(self) -> str:
        return self.spec.conversation_id

    @property
    def think(self) -> ThinkingLevel | None:
        """The run's thinking level: the request's, else the profile's (``None``: the
        provider's default)."""
        if self.overrides.think is not None:
            return self.overrides.think
        # The model's choices are the kit's levels (``AgentProfile.Thinking``).
        return cast(ThinkingLevel, self.spec.thinking) or None

    @property
    def approval_timeout(self) -> int | None:
        """Seconds a held call waits before it is denied (``None``: it waits for a person)."""
        profile = self.spec.profile
        if profile.approval_timeout_action != profile.OnApprovalTimeout.DENY:
            return None
        return profile.approval_timeout or None

    def run_options(self) -> RunOptions:
        """The keyword options of the run's ``Agent.stream``."""
        options = self.overrides.run_options()
        options["think"] = self.think
        return options

    @classmethod
    async def open(cls, conversation_id: str, user_id: int) -> ChatSession:
        """Build the session for a conversation the user owns (one database hop); its usage
        is charged to the current request's API key, if any."""
        loaded = await in_thread(load_session)(conversation_id, user_id)
        return await cls.from_loaded(loaded, key=current_key())

    @classmethod
    async def from_loaded(
        cls, loaded: LoadedSession, overrides: RunOverrides | None = None, key: KeyRef | None = None
    ) -> ChatSession:
        return await cls.build(
            loaded.spec,
            conversation=loaded.conversation,
            workspace=loaded.workspace,
            preloaded=True,
            overrides=overrides,
            key=key,
        )

    @classmethod
    async def build(
        cls,
        spec: RuntimeSpec,
        *,
        conversation: Mapping[str, Any] | None = None,
        workspace: Mapping[str, Any] | None = None,
        preloaded: bool = False,
        overrides: RunOverrides | None = None,
        key: KeyRef | None = None,
    ) -> ChatSession:
        """Build the live agent; with ``preloaded`` the snapshots were read already; its
        usage is charged to ``key`` (the API key its start came with, if any)."""
        profile = spec.profile
        overrides = overrides or RunOverrides()
        provider = provider_for(spec.endpoint, spec.model_name, overrides.sampling)
        conversation_store = DjangoConversationStore(owner=spec.user_id)
        conversations = ConversationManager(
            # The summaries' usage counts as the conversation's (and costs).
            summarize=make_summarizer(provider, usage=UsageRecorder.for_spec(spec, key)),
            keep=profile.keep,
            sections=profile.sections_cap,
            store=conversation_store,
        )
        if not preloaded:
            conversation = await conversation_store.get(spec.conversation_id)
        if conversation is not None:
            conversations.add(snapshot=conversation)
        else:
            conversations.add(id=spec.conversation_id)
        workspace_store = DjangoWorkspaceStore(owner=spec.user_id)
        workspaces = SessionWorkspaces(workspace_store)
        if not preloaded:
            workspace = await workspace_store.get(spec.workspace_id)
        if workspace is not None:
            workspaces.add(id=spec.workspace_id, seed=workspace["files"])
        else:
            workspaces.add(id=spec.workspace_id)
        instructions = InstructionManager()
        if spec.instructions:
            instructions.add(list(spec.instructions))
        decisions = DecisionLog()
        run_tools = RunTools()
        # A rule that asks a person needs the gate that holds its calls (the run's tools
        # answer them with a placeholder); without one, an ``ask`` denies.
        gate = ApprovalGate(run_tools) if any(rule.asks for rule in spec.rules) else None
        # A chat run has someone to answer the model's ``ask_user`` (a job has not).
        questions = QuestionBridge(run_tools)
        run_tools.gate = Gates(gate, questions) if gate is not None else questions
        # The authority reports its own decisions; read-only mode refuses before asking it.
        # Built from rows loaded in ``load_spec``: evaluating a call must run no query.
        authority: Authority | None = (
            PolicyAuthority(spec.policy, spec.rules, decisions.record, gate)
            if spec.policy is not None
            else None
        )
        scope = spec.scope
        clients = tuple(tool.name for tool in overrides.client_tools)
        if clients:
            authority = ClientToolAuthority(authority, clients)
            if scope is not None and scope.tools is not None:
                # The scope filters the profile's tools; the client's are the client's.
                scope = replace(scope, tools=(*scope.tools, *clients))
        agent = Agent(
            provider,
            system="\n\n".join(filter(None, (profile.system_prompt, overrides.system))) or None,
            instructions=instructions,
            workspaces=workspaces,
            conversations=conversations,
            scope=scope,
            authority=authority,
            tools=run_tools,
            limit=profile.limit,
            timeout=profile.timeout,
            read_only=spec.read_only,
            budget=run_budget(profile.token_budget, overrides.max_tokens),
            window=(
                create_budget(profile.context_window, estimate_messages)
                if profile.context_window
                else None
            ),
        )
        agent.emitter.on("deny", decisions.record_refusal)
        reports = ToolReports()
        context = ToolContext(
            user_id=spec.user_id,
            conversation_id=spec.conversation_id,
            agent_context=agent.context,
            settings=getattr(settings, "ORKESTREL", {}),
            agent=agent,
            reports=reports,
        )
        # The one composition root of a run's tools: the rows, then the MCP servers the
        # user may use (asking the user through the run's bridge); closed once the run
        # settles (``finish`` or ``error``), its servers' questions withdrawn first.
        inputs = InputBridge(spec.conversation_id, spec.user_id, timeout=input_seconds())
        agent.emitter.on("finish", inputs.close)
        agent.emitter.on("error", inputs.close)
        sources = RunSources(
            McpToolSource(server, inputs=inputs)
            for server in await usable_servers(spec.mcp_servers, spec.user_id)
        )
        await sources.open()
        sources.equip(agent.context, RowTools(spec.tools, context))
        agent.emitter.on("finish", sources.close_soon)
        agent.emitter.on("error", sources.close_soon)
        for definition in overrides.client_tools:
            agent.context.tools.add(client_tool(definition))
        session = cls(
            spec,
            agent,
            conversations,
            workspaces,
            decisions,
            overrides,
            gate,
            run_tools,
            reports,
            questions=questions,
            inputs=inputs,
        )
        session.sources = sources
        session.key = key
        return session

    async def close(self) -> None:
        """Close the run's tool sources (their connections); the agent's end does it too."""
        await self.sources.close()

    async def commit(
        self,
        usage: TokenUsage | None = None,
        then: Callable[[], None] | None = None,
        after: Callable[[], R] | None = None,
    ) -> R | None:
        """Persist what changed (conversation, workspace, decisions, usage) in one database hop.

        The snapshots are taken here, on the event loop, so the agent may go on meanwhile.
        ``then`` runs in the same transaction after the writes (a run's final row); ``after``
        runs once it committed, off the database thread, and its value is returned (payloads
        to render: rendering waits on the markdown process, and every other start, checkpoint
        and settle of the process would wait behind it on the database thread).
        """
        conversation = self.conversations.conversation(self.conversation_id)
        snapshot = conversation.snapshot() if conversation is not None else None
        changes = Changes(
            snapshot,
            self.workspaces.changes(),
            self.decisions.drain(),
            self.decisions.drain_failures(),
            usage,
        )
        await in_thread(self._commit_rows)(changes, then)
        return await asyncio.to_thread(after) if after is not None else None

    def _commit_rows(self, changes: Changes, then: Callable[[], None] | None) -> None:
        with transaction.atomic():
            if changes.snapshot is not None:
                DjangoConversationStore(owner=self.spec.user_id).set_sync(changes.snapshot)
            if changes.files:
                store = DjangoWorkspaceStore(owner=self.spec.user_id)
                for files in changes.files:
                    files.save(store)
            self._write_rows(changes)
            if then is not None:
                then()

    def _write_rows(self, changes: Changes) -> None:
        """The run's own rows: authority decisions, tool failures, the conversation's usage
        and cost (and the run's cost), the context meter's latest reading."""
        decisions, usage = changes.decisions, changes.usage
        if decisions:
            # A rule deleted mid-run must not fail the commit (and lose the turn): lock the
            # rules still there (PostgreSQL), and keep only the label of the others.
            wanted = {rule.pk for _, _, rule in decisions if rule is not None}
            alive = set(
                AuthorityRule.objects.select_for_update()
                .filter(pk__in=wanted)
                .values_list("pk", flat=True)
            )
            AuthorityDecision.objects.bulk_create(
                [
                    AuthorityDecision(
                        run_id=self.run_id,
                        conversation_id=self.conversation_id,
                        tool_call_id=call.id,
                        tool_name=call.name,
                        arguments=_jsonable(call.arguments),
                        rule=rule if rule is not None and rule.pk in alive else None,
                        rule_label=_rule_label(rule, decision),
                        zone=decision.zone,
                        allowed=decision.allowed,
                        reason=decision.reason or "",
                    )
                    for call, decision, rule in decisions
                ]
            )
        if changes.failures:
            ToolFailure.objects.bulk_create(
                [
                    ToolFailure(
                        run_id=self.run_id,
                        conversation_id=self.conversation_id,
                        tool_call_id=call.id,
                        tool_name=call.name,
                        error=error,
                    )
                    for call, error in changes.failures
                ],
                ignore_conflicts=True,
            )
        if usage is not None and usage.total:
            snapshot = changes.snapshot
            sections = len(snapshot["sections"]) if snapshot is not None else None
            recorder = UsageRecorder.for_spec(self.spec, self.key)
            cost = recorder.add(usage, sections)
            if cost is not None and self.run_id is not None:
                # Only here are the model's prices known; ``finish_run`` writes the counters.
                update(Run, {"id": self.run_id}, {"cost": cost})
            if recorder.charge is not None and self.run_id is not None:
                # The account: it outlives the conversation (``agents.usage``).
                record(
                    recorder.charge,
                    "run",
                    usage,
                    cost,
                    source=str(self.run_id),
                    duration_ms=self.elapsed_ms(),
                )

    def elapsed_ms(self) -> int:
        """Milliseconds since the session was built (its run's latency, once it settles)."""
        return int((time.monotonic() - self.opened) * 1000)

    def record_failure(self) -> None:
        """A failed run's ledger row (its usage is unknown): the dashboard counts errors."""
        charge = UsageRecorder.for_spec(self.spec, self.key).charge
        if charge is not None and self.run_id is not None:
            record(
                charge,
                "run",
                None,
                None,
                source=str(self.run_id),
                outcome="error",
                duration_ms=self.elapsed_ms(),
            )


def _rule_label(rule: AuthorityRule | None, decision: Decision) -> str:
    if decision.zone == READ_ONLY_ZONE:
        return "read-only mode"
    if rule is None:
        return "fallback"
    return f"#{rule.position} {rule.tool_glob} → {rule.verdict}"


def _jsonable(arguments: Mapping[str, Any]) -> Any:
    try:
        return json.loads(json.dumps(dict(arguments), default=str))
    except (TypeError, ValueError):
        return {}
