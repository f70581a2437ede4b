"""``tools/list`` and who may call what: each profile the key's user may use is a tool named
by its slug; any other name is an error, and nothing runs."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group

from agents.models import AgentProfile
from conversations.models import Conversation, Run

pytestmark = pytest.mark.django_db(transaction=True)

MODES = ["auto", "legacy"]


@pytest.fixture
def team(alice, demo) -> AgentProfile:
    """A profile for the ``team`` group: alice is in it, bob is not."""
    profile = AgentProfile.objects.create(
        slug="team", name="Team", description="The team's agent.", model="demo/echo"
    )
    group = Group.objects.create(name="team")
    group.user_set.add(alice)
    profile.groups.add(group)
    return profile


@pytest.mark.parametrize("mode", MODES)
async def test_each_profile_the_user_may_use_is_a_tool_named_by_its_slug(mcp, bob_key, team, mode):
    async with mcp(mode=mode) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"demo", "team"}
    assert tools["team"].title == "Team" and tools["team"].description.startswith("The team's")
    schema = tools["team"].input_schema
    assert schema["required"] == ["message"]
    assert set(schema["properties"]) == {"message", "conversation"}
    assert {"conversation", "usage"} <= set(tools["team"].output_schema["required"])
    async with mcp(key=bob_key, mode=mode) as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["demo"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_profile_the_user_may_not_use_cannot_be_called_and_nothing_runs(
    mcp, bob, bob_key, team, mode
):
    async with mcp(key=bob_key, mode=mode) as client:
        result = await client.call_tool("team", {"message": "let me in"})
        unknown = await client.call_tool("nobody", {"message": "hello?"})
    assert result.is_error and result.content[0].text == "Unknown tool: 'team'."
    assert result.structured_content["error"]["code"] == "unknown_tool"
    # Forbidden and unknown read alike: the tool does not exist for this key.
    assert unknown.is_error and unknown.content[0].text == "Unknown tool: 'nobody'."
    assert await Conversation.objects.filter(owner=bob).acount() == 0
    assert await Run.objects.acount() == 0


@pytest.mark.parametrize(
    ("arguments", "says"),
    [
        ({}, "`message` must be a non-empty string."),
        ({"message": "   "}, "`message` must be a non-empty string."),
        ({"message": 3}, "`message` must be a non-empty string."),
        ({"message": "hi", "conversation": 7}, "`conversation` must be a string."),
        ({"message": "hi", "model": "gpt"}, "Unknown arguments: model."),
    ],
)
async def test_arguments_that_do_not_fit_are_an_error_and_nothing_runs(mcp, demo, arguments, says):
    async with mcp() as client:
        result = await client.call_tool("demo", arguments)
    assert result.is_error and result.content[0].text == says
    assert await sync_to_async(Run.objects.count)() == 0
