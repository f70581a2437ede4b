"""Whether the model server behind a profile can honour what a request steers
(``tool_choice``, ``parallel_tool_calls``, the answer's format): a ``400`` naming the
parameter it cannot, before anything is stored. An option is never dropped in silence.

Each wire protocol says what it cannot do (``unsupported`` of its provider); the offline demo
model follows none of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from conversations.models import Conversation
from orkestrel.core import ProviderStreamOptions
from orkestrel.db import in_thread
from orkestrel.providers import AnthropicProvider, OllamaProvider, OpenAIProvider
from orkestrel.providers.steering import RequestOption, Unsupported, answer_format, forces_tool

from ..models import AgentProfile, ProviderEndpoint
from ..runtime.overrides import RunOverrides
from .errors import bad_request

__all__ = ["CHAT_PARAMS", "RESPONSES_PARAMS", "check_support"]

# Each option's name in a request body of either API.
CHAT_PARAMS: Mapping[RequestOption, str] = {
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "response_format": "response_format",
    "response_format.strict": "response_format.json_schema.strict",
}
RESPONSES_PARAMS: Mapping[RequestOption, str] = {
    "tool_choice": "tool_choice",
    "parallel_tool_calls": "parallel_tool_calls",
    "response_format": "text.format",
    "response_format.strict": "text.format.strict",
}


def _demo(options: ProviderStreamOptions) -> Unsupported | None:
    if forces_tool(options.tool_choice):
        return Unsupported("tool_choice", "the offline demo model cannot be made to call a tool")
    if answer_format(options) is not None:
        return Unsupported("response_format", "the offline demo model only echoes, never JSON")
    return None


CHECKS: Mapping[str, Callable[[ProviderStreamOptions], Unsupported | None]] = {
    ProviderEndpoint.Kind.OPENAI: OpenAIProvider.unsupported,
    ProviderEndpoint.Kind.ANTHROPIC: AnthropicProvider.unsupported,
    ProviderEndpoint.Kind.OLLAMA: OllamaProvider.unsupported,
    ProviderEndpoint.Kind.SCRIPTED: _demo,
}


def _kind_of(model: str) -> str | None:
    name = model.partition("/")[0]
    return ProviderEndpoint.objects.filter(name=name).values_list("kind", flat=True).first()


def endpoint_kind(slug: str, conversation_id: str | None) -> str | None:
    """The kind of model server a run would call: the conversation's chosen model's, else
    its profile's (a new conversation's: the profile ``slug``); ``None`` when unknown (the
    start refuses the request then)."""
    profile_model = None
    if conversation_id is not None:
        row = (
            Conversation.objects.filter(pk=conversation_id)
            .values_list("model", "profile__model")
            .first()
        )
        if row is not None:
            chosen, profile_model = row
            kind = _kind_of(chosen) if chosen else None
            if kind is not None:
                return kind
    if profile_model is None:
        profile_model = (
            AgentProfile.objects.filter(slug=slug, enabled=True)
            .values_list("model", flat=True)
            .first()
        )
    return _kind_of(profile_model) if profile_model else None


def _steers(overrides: RunOverrides) -> bool:
    """Whether the request asks for more than every model server does by default."""
    return (
        overrides.tool_choice not in (None, "auto")
        or overrides.parallel_tool_calls is False
        or overrides.response_format is not None
    )


async def check_support(
    slug: str,
    overrides: RunOverrides,
    params: Mapping[RequestOption, str],
    conversation_id: str | None = None,
) -> None:
    """``OpenAIError`` 400 naming the first option the run's model server cannot honour
    (``params``: the options' names in the request)."""
    if not _steers(overrides):
        return  # nothing to ask the database
    kind = await in_thread(endpoint_kind)(slug, conversation_id)
    check = CHECKS.get(kind) if kind is not None else None
    if check is None:
        return
    options = ProviderStreamOptions(
        schema=overrides.schema,
        tool_choice=overrides.tool_choice,
        parallel_tool_calls=overrides.parallel_tool_calls,
        response_format=overrides.response_format,
    )
    refused = check(options)
    if refused is not None:
        param = params[refused.option]
        raise bad_request(
            f"Unsupported parameter: '{param}' is not supported with this model: {refused.reason}.",
            param,
            "unsupported_parameter",
        )
