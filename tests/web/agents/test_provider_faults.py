"""Model-server faults through the whole app: a real profile on a loopback model server that
misbehaves, driven over the chat websocket.

Each fault ends the run with a clear ``error`` frame (or a finished answer when the fault is
survivable), stores what streamed and a redacted error on the ``Run`` row, shows the failed
turn's text to a socket that connects afterwards, and leaves the socket usable: the next
message gets an answer. The model server is ``tests/providers/server.py``'s ``StubServer``
speaking each protocol's real wire format (the only fake: the model boundary).
"""

from __future__ import annotations

import gc
import json
import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents.framing import MAX_OUTGOING_BYTES
from agents.models import AgentProfile, ProviderEndpoint
from agents.routing import websocket_urlpatterns
from agents.runs.chunk_frames import TEXT_FRAME_CHARS
from conversations.models import Conversation, Message, Run
from orkestrel.providers.wire import MAX_LINE_BYTES
from tests.providers.server import Reply, StubServer
from tests.providers.turns import reply

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://testserver")]
KEY_VARIABLE = "FAULT_API_KEY"
SECRET = "sk-fault-7f3a9c2e1b"  # the endpoint's key: the model server echoes it in errors
WAIT = 15.0  # seconds any one frame may take on a busy 2-core box
KINDS = ("openai", "anthropic", "ollama")


@pytest.fixture
def stub(monkeypatch) -> Iterator[StubServer]:
    monkeypatch.setenv(KEY_VARIABLE, SECRET)
    server = StubServer().start()
    try:
        yield server
    finally:
        server.stop()


def _conversation(user, url: str, kind: str, retries: int, read_timeout: float) -> Conversation:
    endpoint = ProviderEndpoint.objects.create(
        name="faulty",
        kind=kind,
        base_url=url,
        api_key_env=KEY_VARIABLE,
        max_retries=retries,
        read_timeout=read_timeout,
    )
    profile = AgentProfile.objects.create(slug="faulty", name="faulty", model=f"{endpoint.name}/m")
    return Conversation.objects.create(owner=user, title="faults", profile=profile)


async def faulty_conversation(
    user, stub: StubServer, kind: str = "openai", *, retries: int = 0, read_timeout: float = 30.0
) -> Conversation:
    return await sync_to_async(_conversation)(user, stub.url, kind, retries, read_timeout)


async def connect(user, conversation) -> tuple[WebsocketCommunicator, dict[str, Any]]:
    socket = WebsocketCommunicator(
        URLRouter(websocket_urlpatterns), f"/ws/conversations/{conversation.id}/", headers=ORIGIN
    )
    socket.scope["user"] = user
    connected, code = await socket.connect()
    assert connected, code
    state = await socket.receive_json_from(timeout=WAIT)
    assert state["type"] == "state"
    return socket, state


def ended(frame: dict[str, Any]) -> bool:
    return frame["type"] == "finish" or (frame["type"] == "error" and "run" in frame)


async def exchange(socket: WebsocketCommunicator, content: str) -> list[dict[str, Any]]:
    """Send one message; every frame of its run up to the one that ended it."""
    await socket.send_json_to({"type": "send", "content": content})
    frames = []
    while not frames or not ended(frames[-1]):
        frames.append(await socket.receive_json_from(timeout=WAIT))
    assert frames[0]["type"] == "started", frames[0]
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    return frames


def streamed(frames: list[dict[str, Any]]) -> str:
    return "".join(f["content"] for f in frames if f["type"] == "token")


async def answer_after_the_fault(socket, stub: StubServer, kind: str) -> None:
    """The socket is still usable: the next message gets a whole answer."""
    stub.enqueue(reply(kind, ["Back ", "again."]))
    frames = await exchange(socket, "still there?")
    assert frames[-1]["type"] == "finish", frames[-1]
    assert frames[-1]["result"]["content"] == streamed(frames) == "Back again."


def _runs(conversation) -> list[Run]:
    return list(Run.objects.filter(conversation=conversation).order_by("id"))


def _transcript(conversation) -> list[tuple[str, str]]:
    return list(
        Message.objects.filter(conversation=conversation)
        .order_by("position")
        .values_list("role", "content")
    )


# -- the faults ---------------------------------------------------------------------------------


def _json_error(kind: str, message: str) -> bytes:
    if kind == "anthropic":
        body: dict[str, Any] = {"type": "error", "error": {"type": "api_error", "message": message}}
    elif kind == "ollama":
        body = {"error": message}
    else:
        body = {"error": {"message": message, "type": "server_error"}}
    return json.dumps(body).encode()


def _server_error(kind: str) -> list[Reply]:
    # A gateway that echoes the key it was sent: the key must never reach the user or the row.
    return [Reply([_json_error(kind, f"upstream overloaded (key {SECRET})")], status=503)]


def _dropped(kind: str) -> list[Reply]:
    # One more chunk is scripted and never sent: the connection is cut after the text.
    base = reply(kind, ["Half of ", "an answer"], end=False)
    chunks = [*base.chunks, b"never sent"]
    return [Reply(chunks, content_type=base.content_type, drop_after=len(base.chunks))]


def _malformed(kind: str) -> list[Reply]:
    base = reply(kind, ["Before the bad line"], end=False)
    bad = b"{this is not json\n" if kind == "ollama" else b"data: {this is not json\n\n"
    return [Reply([*base.chunks, bad], content_type=base.content_type)]


def _endless(kind: str) -> list[Reply]:
    # Over the provider's line cap with no newline ever, then the connection is held open: only
    # the cap can end this stream (the read timeout is 30 s, far past the test's wait).
    base = reply(kind, ["Before the endless line"], end=False)
    prefix = b"" if kind == "ollama" else b"data: "
    endless = prefix + b'{"x": "' + b"y" * (MAX_LINE_BYTES + 4096)
    return [Reply([*base.chunks, endless], content_type=base.content_type, hold=True)]


def _huge_delta(kind: str) -> list[Reply]:
    # 5 MiB of text in one delta: one event over the line cap, refused rather than buffered.
    base = reply(kind, ["Before the huge delta", "HUGE"], end=False)
    chunks = [chunk.replace(b"HUGE", b"z" * (5 << 20)) for chunk in base.chunks]
    return [Reply(chunks, content_type=base.content_type)]


def _hang(kind: str) -> list[Reply]:
    # Headers and the first text, then nothing: the endpoint's read timeout ends the wait.
    return [reply(kind, ["Thinking so far"], end=False, hold=True)]


def _hang_at_once(kind: str) -> list[Reply]:
    return [Reply([], content_type=reply(kind).content_type, hold=True)]


def _surrogate(kind: str) -> list[Reply]:
    # Half an emoji: ``\ud83d`` is a valid JSON escape and no valid UTF-8.
    base = reply(kind, ["Smile HALF", " done"])
    chunks = [chunk.replace(b"HALF", b"\\ud83d") for chunk in base.chunks]
    return [Reply(chunks, content_type=base.content_type)]


@dataclass(frozen=True)
class Fault:
    """One scripted misbehaviour and what the user must see."""

    replies: Callable[[str], list[Reply]]
    # The run ends with an ``error`` frame whose message holds this (``None``: a ``finish``).
    error: str | None
    # The answer text that streamed before the fault, kept on the row and in the transcript.
    text: str = ""
    endpoint: dict[str, Any] = field(default_factory=dict)


TOO_LONG = f"longer than {MAX_LINE_BYTES} bytes"
FAULTS = {
    "server-error": Fault(_server_error, "HTTP 503 (service unavailable)"),
    "drop-mid-body": Fault(_dropped, "connection broken mid-stream", "Half of an answer"),
    "malformed-line": Fault(_malformed, "malformed stream", "Before the bad line"),
    "endless-line": Fault(_endless, TOO_LONG, "Before the endless line"),
    "huge-delta": Fault(_huge_delta, TOO_LONG, "Before the huge delta"),
    "hang-mid-answer": Fault(_hang, "timed out", "Thinking so far", {"read_timeout": 1.0}),
    "hang-before-any-text": Fault(_hang_at_once, "timed out", "", {"read_timeout": 1.0}),
    "lone-surrogate": Fault(_surrogate, None, "Smile \ufffd done"),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(FAULTS))
async def test_a_model_server_fault_ends_the_run_clearly_and_the_socket_answers_the_next_message(
    user, stub, manager, kind, name, caplog
):
    caplog.set_level(logging.ERROR, logger="asyncio")
    fault = FAULTS[name]
    conversation = await faulty_conversation(user, stub, kind, **fault.endpoint)
    socket, _ = await connect(user, conversation)
    stub.enqueue(*fault.replies(kind))

    frames = await exchange(socket, "please answer")

    last = frames[-1]
    if fault.error is None:
        assert last["type"] == "finish", last
        assert last["result"]["content"] == fault.text
    else:
        assert (last["type"], last["code"]) == ("error", "run_failed"), last
        assert fault.error in last["message"]
        assert SECRET not in json.dumps(frames)
        if name == "server-error":
            # What the model server said is the log's, not the user's.
            assert "upstream overloaded" not in json.dumps(frames)
    assert streamed(frames) == fault.text
    # The key went to the model server, and came back in no frame and no stored error.
    assert SECRET in json.dumps(stub.requests[0].headers)
    run = (await sync_to_async(_runs)(conversation))[0]
    assert run.status == ("done" if fault.error is None else "error")
    assert run.content == fault.text
    if fault.error is not None:
        assert fault.error in run.error and SECRET not in run.error

    # A reload shows the failed turn's text.
    reloaded, state = await connect(user, conversation)
    shown = [(m["role"], m["content"]) for m in state["messages"]]
    expected = [("user", "please answer")] + ([("assistant", fault.text)] if fault.text else [])
    assert shown == expected and state["run"] is None
    await reloaded.disconnect()

    await answer_after_the_fault(socket, stub, kind)
    await socket.disconnect()
    after = [("user", "still there?"), ("assistant", "Back again.")]
    assert await sync_to_async(_transcript)(conversation) == expected + after
    # No task of the failed run was left holding its error (asyncio logs those when collected).
    gc.collect()
    assert "exception was never retrieved" not in caplog.text


async def test_a_5xx_is_retried_when_the_endpoint_allows_it_and_the_retry_answers(
    user, stub, manager
):
    conversation = await faulty_conversation(user, stub, retries=1)
    socket, _ = await connect(user, conversation)
    stub.enqueue(*_server_error("openai"), reply("openai", ["Second ", "try."]))
    frames = await exchange(socket, "please answer")
    assert frames[-1]["type"] == "finish"
    assert streamed(frames) == frames[-1]["result"]["content"] == "Second try."
    assert len(stub.requests) == 2
    run = (await sync_to_async(_runs)(conversation))[0]
    assert (run.status, run.error, run.content) == ("done", "", "Second try.")
    await socket.disconnect()


def _rate_limited(seconds: int) -> Reply:
    body = _json_error("openai", "Rate limit reached for requests")
    return Reply([body], status=429, headers={"retry-after": str(seconds)})


async def test_a_429_without_retries_fails_at_once_saying_so_whatever_the_retry_after(
    user, stub, manager
):
    conversation = await faulty_conversation(user, stub, retries=0)
    socket, _ = await connect(user, conversation)
    stub.enqueue(_rate_limited(30))
    began = time.monotonic()
    frames = await exchange(socket, "please answer")
    # Not held for the 30 s the server asked for: there is no retry to wait for.
    assert time.monotonic() - began < WAIT
    assert (frames[-1]["type"], frames[-1]["code"]) == ("error", "run_failed")
    assert "HTTP 429 (too many requests)" in frames[-1]["message"]
    run = (await sync_to_async(_runs)(conversation))[0]
    assert run.status == "error" and "HTTP 429" in run.error
    await answer_after_the_fault(socket, stub, "openai")
    await socket.disconnect()


class Timed(list):
    """``StubServer.requests`` that also notes when each request arrived (monotonic)."""

    def __init__(self) -> None:
        super().__init__()
        self.times: list[float] = []

    def append(self, item: Any) -> None:
        self.times.append(time.monotonic())
        super().append(item)


async def test_a_429_with_a_retry_left_waits_the_retry_after_then_answers(user, stub, manager):
    stub.requests = arrivals = Timed()
    conversation = await faulty_conversation(user, stub, retries=1)
    socket, _ = await connect(user, conversation)
    stub.enqueue(_rate_limited(1), reply("openai", ["Worth ", "the wait."]))
    frames = await exchange(socket, "please answer")
    assert frames[-1]["type"] == "finish"
    assert streamed(frames) == "Worth the wait."
    assert len(arrivals) == 2
    # Time is the contract here: the retry went out no sooner than the server asked.
    assert arrivals.times[1] - arrivals.times[0] >= 0.95
    # ...and the user was told, before the answer, why and for how long.
    (wait,) = [frame for frame in frames if frame["type"] == "wait"]
    assert (wait["seconds"], wait["status"], wait["reason"]) == (1.0, 429, "rate limited")
    kinds = [frame["type"] for frame in frames]
    assert kinds.index("wait") < kinds.index("token")
    await socket.disconnect()


async def test_a_model_that_hangs_before_answering_fails_at_its_first_token_timeout(
    user, stub, manager
):
    conversation = await faulty_conversation(user, stub, read_timeout=60.0)
    await sync_to_async(ProviderEndpoint.objects.update)(first_token_timeout=0.5)
    socket, _ = await connect(user, conversation)
    stub.enqueue(Reply(reply("openai", ["too late"]).chunks, pause=5.0))
    started = time.monotonic()
    frames = await exchange(socket, "hello?")
    assert frames[-1]["type"] == "error" and "no answer within 0.5 s" in frames[-1]["message"]
    assert time.monotonic() - started < 4.0
    await socket.disconnect()


def _delta(text: str, field: str = "content") -> bytes:
    choice = {"index": 0, "delta": {field: text}, "finish_reason": None}
    return b"data: " + json.dumps({"choices": [choice]}).encode() + b"\n\n"


async def test_a_huge_chunk_streams_in_frames_under_the_socket_limit_and_finishes(
    user, stub, manager
):
    # Two reasoning deltas and six answer deltas of 900,000 characters each (every event under
    # the line cap), in one network write: about 7 MiB of text arrives at once.
    thoughts = [chr(ord("A") + n) * 900_000 for n in range(2)]
    parts = [chr(ord("a") + n) * 900_000 for n in range(6)]
    burst = [_delta(part, "reasoning_content") for part in thoughts]
    burst += [_delta(part) for part in parts]
    stub.enqueue(Reply([b"".join(burst), *reply("openai", ["!"]).chunks]))
    answer, thinking = "".join(parts) + "!", "".join(thoughts)
    conversation = await faulty_conversation(user, stub)
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "a long answer, please"})
    sizes, frames = [], []
    while not frames or not ended(frames[-1]):
        text = await socket.receive_from(timeout=WAIT)
        sizes.append(len(text.encode()))
        frames.append(json.loads(text))
    assert max(sizes) <= MAX_OUTGOING_BYTES
    # The last frame arrives: the client sees the answer end.
    assert frames[-1]["type"] == "finish", [f["type"] for f in frames[-3:]]
    for kind in ("token", "think"):
        assert max(len(f["content"]) for f in frames if f["type"] == kind) == TEXT_FRAME_CHARS
    assert streamed(frames) == answer
    assert "".join(f["content"] for f in frames if f["type"] == "think") == thinking
    run = (await sync_to_async(_runs)(conversation))[0]
    assert (run.status, run.content, run.thinking) == ("done", answer, thinking)
    # A reload fits the socket too (the huge answer is paged back to, not sent whole).
    reloaded, state = await connect(user, conversation)
    assert len(json.dumps(state).encode()) <= MAX_OUTGOING_BYTES
    await reloaded.disconnect()
    await answer_after_the_fault(socket, stub, "openai")
    await socket.disconnect()
