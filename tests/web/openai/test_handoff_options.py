"""A ``/v1`` run's steering survives its hand-off to a Celery worker: the task's JSON brings
back the same overrides (tool choice, parallel calls, the answer's format)."""

from __future__ import annotations

import json

import pytest

from agents.runs.handoff import Handoff
from agents.runtime.overrides import RunOverrides
from orkestrel.core import NamedToolChoice, ResponseFormat, ToolChoice, ToolDefinition

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}}


def handed(overrides: RunOverrides) -> RunOverrides | None:
    handoff = Handoff(
        run_id=1,
        user_id=2,
        conversation_id="0b0b6f2e-8d5c-4a43-9a3e-2f1a1c2b3d4e",
        message=None,
        nonce=None,
        title="",
        overrides=overrides,
    )
    # Through JSON, as Celery carries it.
    return Handoff.from_data(json.loads(json.dumps(handoff.to_data()))).overrides


@pytest.mark.parametrize("choice", ["auto", "required", NamedToolChoice("lookup")])
def test_the_tool_choice_and_a_strict_schema_come_back_as_they_were(choice: ToolChoice) -> None:
    overrides = RunOverrides(
        client_tools=(ToolDefinition("lookup", "Find it", {"type": "object"}),),
        schema=SCHEMA,
        tool_choice=choice,
        parallel_tool_calls=False,
        response_format=ResponseFormat(
            type="json_schema", schema=SCHEMA, name="count", description="How many.", strict=True
        ),
    )
    assert handed(overrides) == overrides


def test_json_object_comes_back_as_json_object_and_no_steering_as_none() -> None:
    overrides = RunOverrides(
        schema={"type": "object"}, response_format=ResponseFormat(type="json_object")
    )
    assert handed(overrides) == overrides
    assert handed(RunOverrides(max_tokens=5)) == RunOverrides(max_tokens=5)
