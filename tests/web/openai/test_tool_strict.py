"""A function tool's ``strict`` flag reaches the model server as the client sent it: on chat
completions (``tools[].function.strict``) and on the Responses API (the tool's own ``strict``,
echoed back), ``true`` and ``false`` alike; absent stays absent; not a boolean is a ``400``."""

from __future__ import annotations

import openai
import pytest

from agents.runs.handoff import _overrides_data, _overrides_from
from agents.runtime.overrides import RunOverrides
from orkestrel.core import ToolDefinition
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


def tool(name: str, strict: bool | None, *, nested: bool = True) -> dict:
    spec: dict = {"name": name, "description": f"The {name} tool.", "parameters": PARAMETERS}
    if strict is not None:
        spec["strict"] = strict
    return {"type": "function", "function": spec} if nested else {"type": "function", **spec}


def sent_functions(stub) -> dict[str, dict]:
    return {
        entry["function"]["name"]: entry["function"] for entry in stub.requests[0].json()["tools"]
    }


async def test_chat_completions_forward_each_tools_strict_flag_unchanged(sdk, upstream, stub):
    stub.enqueue(reply("openai", ["ok"]))
    await sdk().chat.completions.create(
        model="upstream",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=[tool("strict_one", True), tool("loose_one", False), tool("plain_one", None)],
    )
    functions = sent_functions(stub)
    assert functions["strict_one"]["strict"] is True
    assert functions["loose_one"]["strict"] is False
    assert "strict" not in functions["plain_one"]
    assert functions["strict_one"]["parameters"] == PARAMETERS


async def test_the_responses_api_forwards_and_echoes_a_function_tools_strict_flag(
    sdk, upstream, stub
):
    stub.enqueue(reply("openai", ["ok"]))
    made = await sdk().responses.create(
        model="upstream",
        input="Weather?",
        tools=[tool("strict_one", True, nested=False), tool("plain_one", None, nested=False)],
    )
    functions = sent_functions(stub)
    assert functions["strict_one"]["strict"] is True and "strict" not in functions["plain_one"]
    echoed = {entry.name: entry.strict for entry in made.tools}
    assert echoed == {"strict_one": True, "plain_one": None}


async def test_a_strict_flag_that_is_not_a_boolean_is_a_400_naming_it(sdk, upstream, stub):
    bad = tool("odd", None)
    bad["function"]["strict"] = "yes"
    with pytest.raises(openai.BadRequestError) as caught:
        await sdk().chat.completions.create(
            model="upstream", messages=[{"role": "user", "content": "hi"}], tools=[bad]
        )
    assert caught.value.body["param"] == "tools[0].function.strict"
    assert not stub.requests


def test_a_handed_off_run_keeps_its_client_tools_strict_flags():
    overrides = RunOverrides(
        client_tools=(ToolDefinition("a", None, PARAMETERS, True), ToolDefinition("b", "B")),
    )
    again = _overrides_from(_overrides_data(overrides))
    assert [(t.name, t.strict) for t in again.client_tools] == [("a", True), ("b", None)]
