"""What one run may change of its profile: a request's own tools, sampling, schema and bounds.

The OpenAI-compatible endpoints build these from a request; the chat and the REST API run
with none. A run's overrides never loosen what the operator set: the profile's tools, authority
rules, scope, limits and token budget still apply (``max_tokens`` is a completion cap beside the
profile's budget; a run's bounds against a profile's caps: ``runtime.caps``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from orkestrel.core import ResponseFormat, RunOptions, ThinkingLevel, ToolChoice, ToolDefinition

from ..models import ProviderEndpoint

__all__ = ["RunOverrides", "Sampling"]


@dataclass(frozen=True, slots=True)
class Sampling:
    """The sampling fields of a request; ``None`` leaves the upstream's default."""

    temperature: float | None = None
    top_p: float | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None

    def fields(self) -> dict[str, Any]:
        """The fields that are set, by their OpenAI names."""
        values: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "seed": self.seed,
            "stop": list(self.stop) if self.stop is not None else None,
            "presence_penalty": self.presence_penalty,
            "frequency_penalty": self.frequency_penalty,
        }
        return {name: value for name, value in values.items() if value is not None}

    def request_body(self, kind: str) -> dict[str, Any] | None:
        """The fields as the endpoint's wire protocol spells them (``None``: nothing to add).

        OpenAI-compatible upstreams take them as they are; Anthropic has ``temperature``,
        ``top_p`` and ``stop_sequences``; Ollama takes them all under ``options``.
        """
        fields = self.fields()
        if not fields:
            return None
        if kind == ProviderEndpoint.Kind.OPENAI:
            return fields
        if kind == ProviderEndpoint.Kind.ANTHROPIC:
            body: dict[str, Any] = {
                name: fields[name] for name in ("temperature", "top_p") if name in fields
            }
            if "stop" in fields:
                body["stop_sequences"] = fields["stop"]
            return body or None
        if kind == ProviderEndpoint.Kind.OLLAMA:
            return {"options": fields}
        return None  # the scripted demo model does not sample


@dataclass(frozen=True, slots=True)
class RunOverrides:
    """One run's changes to its profile.

    ``client_tools`` are advertised beside the profile's and run by the client: a call to one
    ends the run with the calls. ``max_tokens`` caps the run's completion tokens (under the
    profile's own budget). ``system`` follows the profile's system prompt for this run only
    (the Responses API's ``instructions``). ``request`` is recorded on the run for the operator.
    ``tool_choice``, ``parallel_tool_calls`` and ``response_format`` (which refines ``schema``:
    its name, ``strict``, or ``json_object``) go to the model as the client sent them, on
    every call of the run: a forced call of a client tool ends the run at its first turn.
    """

    client_tools: tuple[ToolDefinition, ...] = ()
    sampling: Sampling = field(default_factory=Sampling)
    schema: Mapping[str, Any] | None = None
    think: ThinkingLevel | None = None
    max_tokens: int | None = None
    system: str | None = None
    request: Mapping[str, Any] | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    response_format: ResponseFormat | None = None

    @property
    def client_names(self) -> frozenset[str]:
        return frozenset(tool.name for tool in self.client_tools)

    def run_options(self) -> RunOptions:
        """What the run's ``Agent.stream`` takes of these (the rest shapes the agent)."""
        options: RunOptions = {}
        if self.schema is not None:
            options["schema"] = self.schema
        if self.tool_choice is not None:
            options["tool_choice"] = self.tool_choice
        if self.parallel_tool_calls is not None:
            options["parallel_tool_calls"] = self.parallel_tool_calls
        if self.response_format is not None:
            options["response_format"] = self.response_format
        return options
