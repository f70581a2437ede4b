"""The names we emit: OpenTelemetry's GenAI semantic conventions and our own ``orkestrel.*``.

Kept here rather than imported: the upstream package marks its GenAI constants as moved
(``opentelemetry.semconv._incubating``), and a rename there must not silently rename a
dashboard's query here. Names follow the GenAI conventions as of semconv 1.37.
"""

from __future__ import annotations

from typing import Final

# -- span names and operations --------------------------------------------------------------

INVOKE_AGENT: Final = "invoke_agent"
CHAT: Final = "chat"
EXECUTE_TOOL: Final = "execute_tool"

# -- GenAI attributes -------------------------------------------------------------------------

OPERATION_NAME: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
CONVERSATION_ID: Final = "gen_ai.conversation.id"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
USAGE_INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS: Final = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS: Final = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS: Final = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME: Final = "gen_ai.tool.name"
TOOL_CALL_ID: Final = "gen_ai.tool.call.id"
TOOL_TYPE: Final = "gen_ai.tool.type"
TOOL_CALL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT: Final = "gen_ai.tool.call.result"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOKEN_TYPE: Final = "gen_ai.token.type"
ERROR_TYPE: Final = "error.type"

# -- ours -------------------------------------------------------------------------------------

RUN_ID: Final = "orkestrel.run.id"
JOB_ID: Final = "orkestrel.job.id"
TURN: Final = "orkestrel.turn"
STOP_REASON: Final = "orkestrel.stop_reason"
RUN_STATUS: Final = "orkestrel.run.status"
TIME_TO_FIRST_CHUNK: Final = "orkestrel.time_to_first_chunk"
COST_USD: Final = "orkestrel.cost.usd"
AUTHORITY_DECISION: Final = "orkestrel.authority.decision"
AUTHORITY_RULE: Final = "orkestrel.authority.rule"
AUTHORITY_ZONE: Final = "orkestrel.authority.zone"
AUTHORITY_REASON: Final = "orkestrel.authority.reason"
TOOL_OUTCOME: Final = "orkestrel.tool.outcome"
# The span event of a call held for a person's approval.
APPROVAL_WAIT: Final = "orkestrel.approval.wait"

# -- metric names (Prometheus spelling of the GenAI metrics, then ours) -------------------------

METRIC_TOKEN_USAGE: Final = "gen_ai_client_token_usage"
METRIC_OPERATION_DURATION: Final = "gen_ai_client_operation_duration_seconds"
METRIC_TIME_TO_FIRST_TOKEN: Final = "gen_ai_client_time_to_first_token_seconds"
