"""The chat websocket over Channels' communicator: protocol, fan-out, joins, access, bad frames."""

import asyncio
import json

import pytest
from asgiref.sync import sync_to_async
from channels.routing import URLRouter
from channels.testing import WebsocketCommunicator

from agents.routing import websocket_urlpatterns
from agents.runs import RunManager
from conversations.models import Message, Run

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = [(b"origin", b"http://testserver")]


def application():
    return URLRouter(websocket_urlpatterns)


async def connect(user, conversation, *, expect=True):
    communicator = WebsocketCommunicator(
        application(), f"/ws/conversations/{conversation.id}/", headers=ORIGIN
    )
    communicator.scope["user"] = user
    connected, code = await communicator.connect()
    if expect:
        assert connected, code
        state = await communicator.receive_json_from(timeout=5)
        assert state["type"] == "state"
        return communicator, state
    return communicator, code


async def frames_until(communicator, kind, timeout=5):
    frames = []
    while True:
        frame = await communicator.receive_json_from(timeout=timeout)
        frames.append(frame)
        if frame["type"] == kind:
            return frames


async def test_send_streams_frames_in_order_to_the_socket(user, conversation, fast_demo, manager):
    socket, state = await connect(user, conversation)
    assert state["run"] is None and state["messages"] == []
    await socket.send_json_to({"type": "send", "content": "hi", "nonce": "n1"})
    frames = await frames_until(socket, "finish")
    assert frames[0]["type"] == "started" and frames[0]["nonce"] == "n1"
    assert frames[0]["message"]["content"] == "hi"
    assert [f["seq"] for f in frames] == list(range(1, len(frames) + 1))
    kinds = [f["type"] for f in frames]
    assert kinds.index("token") < kinds.index("committed") < kinds.index("finish")
    await socket.disconnect()


async def test_two_sockets_receive_the_same_stream(user, conversation, fast_demo, manager):
    first, _ = await connect(user, conversation)
    second, _ = await connect(user, conversation)
    await first.send_json_to({"type": "send", "content": "fan out"})
    one = await frames_until(first, "finish")
    two = await frames_until(second, "finish")
    assert one == two
    await first.disconnect()
    await second.disconnect()


async def test_joining_mid_run_gets_content_so_far_then_the_rest(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    first, _ = await connect(user, conversation)
    await first.send_json_to({"type": "send", "content": "a long enough message to stream"})
    seen = []
    while len([f for f in seen if f["type"] == "token"]) < 3:
        seen.append(await first.receive_json_from(timeout=5))
    late, state = await connect(user, conversation)
    assert state["run"] is not None
    run = state["run"]
    rest = await frames_until(late, "finish")
    assert all(f["seq"] > run["seq"] for f in rest if f.get("run") == run["id"])
    assert [f["seq"] for f in rest] == list(range(run["seq"] + 1, run["seq"] + 1 + len(rest)))
    tokens_after = "".join(f["content"] for f in rest if f["type"] == "token")
    final = rest[-1]["result"]["content"]
    assert run["content"] + tokens_after == final
    await first.disconnect()
    await late.disconnect()


async def test_closing_the_socket_never_stops_the_run(user, conversation, demo, manager, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "keep going"})
    await socket.receive_json_from(timeout=5)
    await socket.disconnect()
    await manager.wait(str(conversation.id))
    roles = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation).values_list("role", flat=True)
    )
    assert list(roles) == ["user", "assistant"]


async def test_abort_frame_commits_the_partial(user, conversation, demo, manager, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "stop me"})
    frames = []
    while not any(f["type"] == "token" for f in frames):
        frames.append(await socket.receive_json_from(timeout=5))
    await socket.send_json_to({"type": "abort"})
    frames += await frames_until(socket, "finish")
    assert [f["type"] for f in frames][-2:] == ["abort", "finish"]
    streamed = "".join(f["content"] for f in frames if f["type"] == "token")
    assert frames[-1]["result"]["content"] == streamed
    committed = [m for f in frames if f["type"] == "committed" for m in f["messages"]]
    assert committed[-1]["content"] == streamed
    await socket.disconnect()


async def test_messages_sent_while_busy_wait_and_start_the_next_run_merged(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "one", "nonce": "n1"})
    await frames_until(socket, "started")
    await socket.send_json_to({"type": "send", "content": "two", "nonce": "n2"})
    await socket.send_json_to({"type": "send", "content": "three", "nonce": "n3"})
    queued = await frames_until(socket, "pending")
    while [m["content"] for m in queued[-1]["messages"]] != ["two", "three"]:
        queued = await frames_until(socket, "pending")
    await socket.send_json_to({"type": "abort"})
    await frames_until(socket, "finish")
    # The stop ended the first run; the queue starts the next, as one message.
    nxt = await frames_until(socket, "started")
    assert nxt[-1]["message"]["content"] == "two\n\nthree"
    await frames_until(socket, "finish")
    contents = await sync_to_async(list)(
        Message.objects.filter(conversation=conversation, role="user")
        .order_by("position")
        .values_list("content", flat=True)
    )
    assert list(contents) == ["one", "two\n\nthree"]
    await socket.disconnect()


async def test_pending_messages_can_be_taken_back_and_then_start_nothing(
    user, conversation, demo, manager, settings
):
    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.02}
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "one"})
    await frames_until(socket, "started")
    await socket.send_json_to({"type": "send", "content": "fix me"})
    await frames_until(socket, "pending")
    await socket.send_json_to({"type": "pending_pop"})
    taken = await frames_until(socket, "pending")
    while not taken[-1]["taken"]:
        taken = await frames_until(socket, "pending")
    assert taken[-1]["taken"] == ["fix me"] and taken[-1]["messages"] == []
    await socket.send_json_to({"type": "abort"})
    await frames_until(socket, "finish")
    await manager.drain()
    runs = await sync_to_async(Run.objects.filter(conversation=conversation).count)()
    assert runs == 1
    await socket.disconnect()


async def test_anonymous_and_other_users_are_refused_with_a_close_code(
    user, other, conversation, manager
):
    from django.contrib.auth.models import AnonymousUser

    for who, code in ((AnonymousUser(), 4401), (other, 4403)):
        communicator = WebsocketCommunicator(
            application(), f"/ws/conversations/{conversation.id}/", headers=ORIGIN
        )
        communicator.scope["user"] = who
        await communicator.connect()
        assert await communicator.receive_output(timeout=5) == {
            "type": "websocket.close",
            "code": code,
        }


async def test_foreign_origin_is_refused(user, conversation, manager):
    from orkestrel.asgi import application as asgi

    communicator = WebsocketCommunicator(
        asgi, f"/ws/conversations/{conversation.id}/", headers=[(b"origin", b"http://evil.example")]
    )
    connected, _ = await communicator.connect()
    assert not connected


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ("not json", "invalid"),
        ("[1, 2]", "invalid"),
        (json.dumps({"type": "dance"}), "unknown_type"),
        (json.dumps({"type": "send"}), "invalid"),
        (json.dumps({"type": "send", "content": "   "}), "nothing_to_continue"),
        (json.dumps({"type": "send", "content": "x" * 100_001}), "too_large"),
        (json.dumps({"type": "send", "content": "x", "images": ["not base64!"]}), "invalid"),
        (json.dumps({"type": "send", "content": "x", "images": ["aGVsbG8="]}), "invalid"),
        (json.dumps({"type": "send", "content": "x", "images": "aGk="}), "invalid"),
        (json.dumps({"type": "compact", "focus": 3}), "invalid"),
        ('{"type": ["send"]}', "unknown_type"),
        ('{"type": {"a": 1}}', "unknown_type"),
        ('{"type": "send", "content": "half \\ud83d"}', "invalid"),
        ('{"type": "send", "content": "hi", "nonce": "\\udc00"}', "invalid"),
        ('{"type": "compact", "focus": "\\ud83d"}', "invalid"),
    ],
    ids=[
        "not-json",
        "not-object",
        "unknown-type",
        "send-without-content",
        "blank-content",
        "oversized-content",
        "bad-base64",
        "not-an-image",
        "images-not-list",
        "focus-not-string",
        "type-a-list",
        "type-an-object",
        "content-lone-surrogate",
        "nonce-lone-surrogate",
        "focus-lone-surrogate",
    ],
)
async def test_bad_frames_get_an_error_frame_and_store_nothing(
    user, conversation, manager, payload, code
):
    socket, _ = await connect(user, conversation)
    await socket.send_to(text_data=payload)
    frame = await socket.receive_json_from(timeout=5)
    assert frame["type"] == "error" and frame["code"] == code
    await socket.send_json_to({"type": "resync"})
    assert (await socket.receive_json_from(timeout=5))["type"] == "state"
    assert await sync_to_async(Message.objects.filter(conversation=conversation).count)() == 0
    await socket.disconnect()


async def test_oversized_image_is_refused(user, conversation, manager, settings):
    settings.ORKESTREL = {**settings.ORKESTREL, "MAX_IMAGE_BYTES": 10}
    import base64

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 64).decode()
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "x", "images": [png]})
    frame = await socket.receive_json_from(timeout=5)
    assert frame["code"] == "too_large"
    await socket.disconnect()


async def test_an_image_reaches_the_model_input(user, conversation, fast_demo, manager):
    import base64

    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"0" * 16).decode()
    socket, _ = await connect(user, conversation)
    await socket.send_json_to({"type": "send", "content": "look", "images": [png]})
    await frames_until(socket, "finish")
    stored = await sync_to_async(Message.objects.get)(conversation=conversation, role="user")
    assert stored.images == [png]
    await socket.disconnect()


async def test_compact_frame_folds_history_and_broadcasts_the_section(
    user, conversation, fast_demo, manager
):
    socket, _ = await connect(user, conversation)
    for text in ("first message", "second message"):
        await socket.send_json_to({"type": "send", "content": text})
        await frames_until(socket, "finish")
    await socket.send_json_to({"type": "compact", "focus": "names"})
    frame = await socket.receive_json_from(timeout=5)
    assert frame["type"] == "compaction", frame
    assert frame["section"]["summary"]
    assert len(frame["section"]["messages"]) >= 2
    await socket.send_json_to({"type": "resync"})
    state = await socket.receive_json_from(timeout=5)
    assert len(state["sections"]) == 1
    await socket.disconnect()


def _redis_layer(settings) -> None:
    import os

    from channels.layers import channel_layers

    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {
                "hosts": [{"address": os.environ["REDIS_URL"], "socket_timeout": None}],
                "capacity": 10_000,
            },
        }
    }
    channel_layers.backends.clear()


async def _drain(layer, channel, seconds):
    """Everything ``channel`` receives within ``seconds``."""
    got = []
    try:
        async with asyncio.timeout(seconds):
            while True:
                got.append(await layer.receive(channel))
    except TimeoutError:
        return got


@pytest.mark.skipif("not __import__('os').environ.get('REDIS_URL')", reason="set REDIS_URL to run")
async def test_a_run_in_another_process_reaches_the_socket_through_redis(
    user, conversation, fast_demo, manager, settings
):
    from channels.layers import channel_layers

    _redis_layer(settings)
    try:
        socket, _ = await connect(user, conversation)
        elsewhere = RunManager()  # another process's manager: frames only reach us via Redis
        await elsewhere.start(
            user_id=user.id, conversation_id=str(conversation.id), content="via redis"
        )
        frames = await frames_until(socket, "finish", timeout=10)
        assert frames[0]["type"] == "started"
        assert "token" in [f["type"] for f in frames]
        await elsewhere.wait(str(conversation.id))
        await socket.disconnect()
    finally:
        channel_layers.backends.clear()


@pytest.mark.skipif("not __import__('os').environ.get('REDIS_URL')", reason="set REDIS_URL to run")
async def test_joining_mid_run_across_processes_gets_a_snapshot_then_the_rest(
    user, conversation, demo, manager, settings
):
    from channels.layers import channel_layers

    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.01}
    _redis_layer(settings)
    try:
        elsewhere = RunManager()  # the run lives in "another process"
        watcher, _ = await connect(user, conversation)
        await elsewhere.start(
            user_id=user.id, conversation_id=str(conversation.id), content="cross process join"
        )
        seen = []
        while len([f for f in seen if f["type"] == "token"]) < 3:
            seen.append(await watcher.receive_json_from(timeout=5))
        late, state = await connect(user, conversation)
        run = state["run"]
        assert run is not None and run["content"]
        rest = await frames_until(late, "finish", timeout=10)
        assert [f["seq"] for f in rest] == list(range(run["seq"] + 1, run["seq"] + 1 + len(rest)))
        tokens_after = "".join(f["content"] for f in rest if f["type"] == "token")
        assert run["content"] + tokens_after == rest[-1]["result"]["content"]
        await elsewhere.wait(str(conversation.id))
        await watcher.disconnect()
        await late.disconnect()
    finally:
        channel_layers.backends.clear()


@pytest.mark.skipif("not __import__('os').environ.get('REDIS_URL')", reason="set REDIS_URL to run")
async def test_a_run_no_other_process_listens_to_stops_publishing_deltas_after_the_grace_period(
    user, conversation, demo, manager, settings
):
    from channels.layers import channel_layers, get_channel_layer

    from agents.runs import RunTimings, group_name

    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.03}
    _redis_layer(settings)
    try:
        layer = get_channel_layer()
        # A member of the group that never answers probes: it sees what the process publishes.
        observer = await layer.new_channel()
        await layer.group_add(group_name(str(conversation.id)), observer)
        owner = RunManager(timings=RunTimings(listen_grace=0.5))
        local = []

        async def collect(frame):
            local.append(frame)

        owner.subscribe(str(conversation.id), collect)
        await owner.start(user_id=user.id, conversation_id=str(conversation.id), content="hi")
        await owner.wait(str(conversation.id))
        await owner.drain()
        seen = await _drain(layer, observer, 1.0)
        shared = [f for m in seen if m["type"] == "run.frames" for f in m["frames"]]
        kinds = [f["type"] for f in shared]
        assert kinds[0] == "started" and kinds[-1] == "finish"  # rare frames always go
        tokens = [f for f in local if f["type"] == "token"]
        # Deltas went only during the grace period: nobody answered the probe.
        assert 0 < kinds.count("token") < len(tokens)
        await layer.group_discard(group_name(str(conversation.id)), observer)
    finally:
        channel_layers.backends.clear()


@pytest.mark.skipif("not __import__('os').environ.get('REDIS_URL')", reason="set REDIS_URL to run")
async def test_a_socket_of_another_process_gets_the_whole_run_after_the_grace_period(
    user, conversation, demo, manager, settings
):
    from channels.layers import channel_layers

    from agents.runs import RunTimings

    settings.ORKESTREL = {**settings.ORKESTREL, "DEMO_WORD_DELAY": 0.03}
    _redis_layer(settings)
    try:
        socket, _ = await connect(user, conversation)  # answers the owner's probe
        owner = RunManager(timings=RunTimings(listen_grace=0.2))  # another process's manager
        await owner.start(user_id=user.id, conversation_id=str(conversation.id), content="hi")
        frames = await frames_until(socket, "finish", timeout=15)
        seqs = [f["seq"] for f in frames]
        assert seqs == list(range(1, len(seqs) + 1))
        text = "".join(f["content"] for f in frames if f["type"] == "token")
        assert text == frames[-1]["result"]["content"] and len(text) > 50
        await owner.wait(str(conversation.id))
        await socket.disconnect()
    finally:
        channel_layers.backends.clear()


async def test_an_unknown_websocket_path_is_closed_with_4404_not_a_server_error(user):
    communicator = WebsocketCommunicator(application(), "/ws/nowhere/", headers=ORIGIN)
    communicator.scope["user"] = user
    await communicator.connect()
    assert await communicator.receive_output(timeout=5) == {
        "type": "websocket.close",
        "code": 4404,
    }
