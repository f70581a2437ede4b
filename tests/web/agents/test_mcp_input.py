"""An MCP server asks the chat's user for input mid-call (elicitation): a real SDK server in a
subprocess over Streamable HTTP, on the 2025-11-25 revision (an ``elicitation/create`` request
mid-call) and on 2026-07-28 (an input-required result). The request reaches every tab as an
``input`` frame; the user's ``respond`` frame answers it (accept with the form's values,
decline, cancel), and the tool's result, with the values, reaches the model. Content that does
not fit the form is refused to the user and never reaches the server; nobody answering in time
cancels, and so does stopping the run. The model is scripted (the stub server)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator

from agents.mcp.catalog import catalog
from agents.models import McpServer
from agents.runs import RunManager, RunService
from agents.runs.inputs import respond
from agents.runtime.mcp_input import InputInvalid, NoSuchInput
from conversations.models import Conversation
from tests.mcp_input_server import SCRIPT
from tests.mcp_server import McpProcess
from tests.providers.turns import reply
from tests.web.layers import needs_redis, redis_layer

from .sockets import connect, until

pytestmark = pytest.mark.django_db(transaction=True)

BOOKING = {"party": 4, "day": "2026-08-01", "seating": "outdoor"}


@pytest.fixture(autouse=True)
def empty_catalog() -> Iterator[None]:
    catalog.clear()
    yield
    catalog.clear()


def _server(tmp_path_factory: pytest.TempPathFactory, legacy: bool) -> Iterator[McpProcess]:
    log = tmp_path_factory.mktemp("mcp-input") / "server.log"
    server = McpProcess.start(log, env={"MCP_TEST_LEGACY": "1"} if legacy else {}, script=SCRIPT)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def legacy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    """The server on the 2025-11-25 revision (it refuses ``server/discover``)."""
    yield from _server(tmp_path_factory, legacy=True)


@pytest.fixture(scope="module")
def modern(tmp_path_factory: pytest.TempPathFactory) -> Iterator[McpProcess]:
    """The server on 2026-07-28."""
    yield from _server(tmp_path_factory, legacy=False)


@pytest.fixture
def chat_on(user, editor) -> Callable[..., Any]:
    """``await chat_on(url, **server_fields)``: a conversation whose profile uses the server."""

    @sync_to_async
    def make(url: str, **fields: Any) -> Conversation:
        profile = editor()
        McpServer.objects.create(name="asking", url=url, **fields).profiles.add(profile)
        return Conversation.objects.create(owner=user, title="Asking", profile=profile)

    return make


def calling(tool: str, arguments: dict[str, Any], answer: str = "Done.") -> tuple[Any, Any]:
    """The model's script: call ``asking__<tool>``, then answer."""
    return (
        reply("openai", calls=[("c1", f"asking__{tool}", arguments)]),
        reply("openai", [answer]),
    )


async def asked(socket: WebsocketCommunicator) -> dict[str, Any]:
    """The request the next ``input`` frame adds."""
    frame = (await until(socket, "input"))[-1]
    assert frame["settled"] is None
    return frame["requests"][-1]


async def settled(socket: WebsocketCommunicator) -> dict[str, Any]:
    """The next ``input`` frame that settles a request."""
    while True:
        frame = (await until(socket, "input"))[-1]
        if frame["settled"] is not None:
            return frame


async def tool_result(socket: WebsocketCommunicator, stub) -> tuple[Any, str]:
    """The run's tool frame's result, and what the model read of it."""
    frames = await until(socket, "finish")
    tool = next(frame for frame in frames if frame["type"] == "tool")
    sent = next(m for m in stub.requests[-1].json()["messages"] if m["role"] == "tool")
    return tool["result"], sent["content"]


async def test_a_legacy_form_reaches_every_tab_and_the_accepted_values_reach_the_model(
    user, chat_on, stub, manager, legacy
):
    chat = await chat_on(legacy.url)
    stub.enqueue(*calling("book_table", {"restaurant": "Chez Ada"}, "Booked."))
    first, _ = await connect(user, chat)
    second, _ = await connect(user, chat)
    await first.send_json_to({"type": "send", "content": "book a table"})
    request = await asked(first)
    assert (request["server"], request["mode"], request["message"], request["url"]) == (
        "asking",
        "form",
        "Book a table at Chez Ada?",
        None,
    )
    fields = {field["name"]: field for field in request["fields"]}
    assert [(f["name"], f["kind"], f["label"], f["required"]) for f in request["fields"]] == [
        ("party", "integer", "Party size", True),
        ("day", "text", "Day", True),
        ("seating", "choice", "Seating", True),
        ("notes", "text", "Notes", False),
    ]
    assert (fields["party"]["minimum"], fields["party"]["maximum"]) == (1, 12)
    assert fields["party"]["description"] == "How many people."
    assert fields["day"]["format"] == "date"
    assert [o["value"] for o in fields["seating"]["options"]] == ["indoor", "outdoor"]
    assert (await asked(second))["id"] == request["id"]
    # A tab opened now finds it waiting in the run's snapshot.
    third, state = await connect(user, chat)
    assert [waiting["id"] for waiting in state["run"]["inputs"]] == [request["id"]]

    await second.send_json_to(
        {"type": "respond", "id": request["id"], "action": "accept", "content": BOOKING}
    )
    for tab in (first, second, third):
        frame = await settled(tab)
        assert frame["requests"] == []
        assert frame["settled"] == {"id": request["id"], "action": "accept", "by": "user"}
    result, read = await tool_result(first, stub)
    booked = "booked 4 at Chez Ada on 2026-08-01, outdoor"
    assert result == {"value": {"result": booked}}
    assert json.loads(read) == {"result": booked}
    for tab in (first, second, third):
        await tab.disconnect()


async def test_an_input_required_result_is_answered_and_the_call_goes_on(
    user, chat_on, stub, manager, modern
):
    chat = await chat_on(modern.url)
    stub.enqueue(*calling("confirm_order", {"item": "apples"}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "order apples"})
    request = await asked(socket)
    assert request["message"] == "How many apples?"
    quantity, gift = request["fields"]
    assert (quantity["kind"], quantity["required"], quantity["minimum"], quantity["maximum"]) == (
        "integer",
        True,
        1,
        5,
    )
    assert (gift["label"], gift["kind"], gift["default"], gift["required"]) == (
        "Gift wrap",
        "boolean",
        False,
        False,
    )
    content = {"quantity": 2, "gift": True}
    await socket.send_json_to(
        {"type": "respond", "id": request["id"], "action": "accept", "content": content}
    )
    assert (await settled(socket))["settled"]["action"] == "accept"
    result, read = await tool_result(socket, stub)
    assert result == {"value": "ordered 2 apples gift-wrapped"}
    assert json.loads(read) == "ordered 2 apples gift-wrapped"
    await socket.disconnect()


async def test_content_that_does_not_fit_is_refused_and_a_decline_reaches_the_server(
    user, chat_on, stub, manager, modern
):
    # On 2026-07-28 the SDK's resolver asks through an input-required result.
    chat = await chat_on(modern.url)
    stub.enqueue(*calling("book_table", {"restaurant": "Chez Ada"}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "book"})
    request = await asked(socket)
    bad = {"party": 2.5, "seating": "balcony", "pets": True, "notes": 3}
    await socket.send_json_to(
        {"type": "respond", "id": request["id"], "action": "accept", "content": bad}
    )
    error = await socket.receive_json_from(timeout=5)
    assert (error["type"], error["code"]) == ("error", "invalid_input")
    for problem in (
        "'pets' is not a field of this form",
        "'Party size' must be a whole number",
        "'Day' is required",
        "'Seating' must be one of ['indoor', 'outdoor']",
        "'Notes' must be text",
    ):
        assert problem in error["message"]
    for frame, code in (
        ({"type": "respond", "id": "nope", "action": "accept", "content": BOOKING}, "not_found"),
        ({"type": "respond", "id": request["id"], "action": "maybe"}, "invalid"),
        ({"type": "respond", "id": request["id"], "action": "decline", "content": {}}, "invalid"),
    ):
        await socket.send_json_to(frame)
        error = await socket.receive_json_from(timeout=5)
        assert (error["type"], error["code"]) == ("error", code)
    # Nothing was forwarded: the request still waits, and a decline settles it.
    assert [r["id"] for r in manager.active(str(chat.pk)).session.inputs.waiting()] == [
        request["id"]
    ]
    await socket.send_json_to({"type": "respond", "id": request["id"], "action": "decline"})
    assert (await settled(socket))["settled"] == {
        "id": request["id"],
        "action": "decline",
        "by": "user",
    }
    result, _ = await tool_result(socket, stub)
    assert result == {"value": {"result": "booking declined"}}
    await socket.disconnect()


async def test_a_cancel_by_the_user_and_nobody_answering_in_time_both_cancel(
    user, chat_on, stub, manager, legacy, settings
):
    chat = await chat_on(legacy.url)
    stub.enqueue(*calling("book_table", {"restaurant": "A"}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "book"})
    request = await asked(socket)
    await socket.send_json_to({"type": "respond", "id": request["id"], "action": "cancel"})
    assert (await settled(socket))["settled"]["by"] == "user"
    assert (await tool_result(socket, stub))[0] == {"value": {"result": "booking cancelled"}}

    settings.ORKESTREL = {**settings.ORKESTREL, "MCP_INPUT_SECONDS": 0.5}
    stub.enqueue(*calling("book_table", {"restaurant": "B"}))
    await socket.send_json_to({"type": "send", "content": "book again"})
    request = await asked(socket)
    frame = await settled(socket)
    assert frame["settled"] == {"id": request["id"], "action": "cancel", "by": "timeout"}
    assert (await tool_result(socket, stub))[0] == {"value": {"result": "booking cancelled"}}
    await socket.disconnect()


async def test_stopping_the_run_withdraws_its_request(user, chat_on, stub, manager, legacy):
    chat = await chat_on(legacy.url)
    stub.enqueue(*calling("book_table", {"restaurant": "A"}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "book"})
    request = await asked(socket)
    await socket.send_json_to({"type": "abort"})
    frame = await settled(socket)
    assert frame["settled"] == {"id": request["id"], "action": "cancel", "by": "run"}
    finish = (await until(socket, "finish"))[-1]
    assert finish["result"]["stop"] == "abort"
    # Withdrawn: an answer now finds nothing.
    await socket.send_json_to({"type": "respond", "id": request["id"], "action": "decline"})
    assert (await socket.receive_json_from(timeout=5))["code"] == "not_found"
    await socket.disconnect()


async def test_a_url_request_shows_its_link_and_an_accept_says_the_user_went(
    user, chat_on, stub, manager, legacy
):
    chat = await chat_on(legacy.url)
    stub.enqueue(*calling("link_account", {}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "link my account"})
    request = await asked(socket)
    assert (request["mode"], request["url"], request["fields"], request["message"]) == (
        "url",
        "https://accounts.example.com/link",
        [],
        "Sign in to link your account.",
    )
    await socket.send_json_to({"type": "respond", "id": request["id"], "action": "accept"})
    assert (await tool_result(socket, stub))[0] == {"value": {"result": "link accept"}}
    await socket.disconnect()


async def test_the_persons_time_does_not_count_against_the_calls_timeout(
    user, chat_on, stub, manager, legacy
):
    chat = await chat_on(legacy.url, call_timeout=1.0)
    stub.enqueue(*calling("book_table", {"restaurant": "Slow"}))
    socket, _ = await connect(user, chat)
    await socket.send_json_to({"type": "send", "content": "book"})
    request = await asked(socket)
    await asyncio.sleep(1.5)  # time is the contract: longer than the server's call timeout
    await socket.send_json_to(
        {"type": "respond", "id": request["id"], "action": "accept", "content": BOOKING}
    )
    result, _ = await tool_result(socket, stub)
    assert result == {"value": {"result": "booked 4 at Slow on 2026-08-01, outdoor"}}
    await socket.disconnect()


@needs_redis
async def test_an_answer_reaching_another_process_reaches_the_run(
    user, chat_on, stub, legacy, settings
):
    with redis_layer(settings):
        chat = await chat_on(legacy.url)
        stub.enqueue(*calling("book_table", {"restaurant": "Remote"}))
        owner = RunService(RunManager())  # the process running the answer
        elsewhere = RunManager()  # a web process holding another tab
        handle = await owner.start(
            user_id=user.pk, conversation_id=str(chat.pk), content="book remotely"
        )
        request = None
        async for frame in owner.follow(handle.id):
            if frame["type"] == "input":
                request = frame["requests"][0]
                break
        assert request is not None
        answer = {"user_id": user.pk, "conversation_id": str(chat.pk), "request_id": request["id"]}
        with pytest.raises(InputInvalid, match="'Day' is required"):
            await respond(elsewhere, action="accept", content={"party": 2}, **answer)
        with pytest.raises(NoSuchInput):
            await respond(
                elsewhere, action="accept", content=BOOKING, **{**answer, "user_id": user.pk + 1}
            )
        done = await respond(elsewhere, action="accept", content=BOOKING, **answer)
        assert done == {"id": request["id"], "action": "accept", "by": "user"}
        frames = [frame async for frame in owner.follow(handle.id)]
        tool = next(frame for frame in frames if frame["type"] == "tool")
        assert tool["result"] == {"value": {"result": "booked 4 at Remote on 2026-08-01, outdoor"}}
        await owner.wait(handle.id)
