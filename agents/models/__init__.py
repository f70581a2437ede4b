"""Models of the agents app: what operators configure for agents to run.

Provider endpoints (where models live), tools, authority policies with their ordered rules,
scopes, instructions, and the agent profiles that tie them together. Every model validates in
``clean()`` with field errors; database constraints back the rules that must never break.
"""

from .authority import AuthorityPolicy, AuthorityRule
from .context import Instruction, Scope
from .endpoints import ProviderEndpoint
from .jobs import AgentJob
from .keys import ApiKey
from .mcp import McpCredential, McpServer
from .profiles import AgentProfile
from .prompts import PromptTemplate
from .retention import RETENTION_KINDS, PurgeReport, RetentionKind
from .revision import (
    ConfigRevision,
    bump_config_revision,
    config_revision_sql,
    config_revision_subquery,
)
from .schedules import Schedule, ScheduleRun, new_salt
from .skills import Skill
from .tools import Tool
from .usage import Quota, UsageEntry

__all__ = [
    "AgentJob",
    "AgentProfile",
    "ApiKey",
    "AuthorityPolicy",
    "AuthorityRule",
    "ConfigRevision",
    "Instruction",
    "McpCredential",
    "McpServer",
    "PromptTemplate",
    "PurgeReport",
    "ProviderEndpoint",
    "Quota",
    "RETENTION_KINDS",
    "RetentionKind",
    "Schedule",
    "ScheduleRun",
    "Scope",
    "Skill",
    "Tool",
    "UsageEntry",
    "bump_config_revision",
    "config_revision_sql",
    "config_revision_subquery",
    "new_salt",
]
