"""Command tools under the OS sandbox, with real processes: what a command can and cannot reach,
and its files coming back into the workspace.

Every test here needs bubblewrap able to run on this machine and skips, with the reason,
where it cannot (``apt-get install bubblewrap``; unprivileged user namespaces allowed).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings
from django.contrib.auth import get_user_model

from agents.management.commands.bootstrap import ensure_demo_profile
from agents.models import Tool as ToolRow
from agents.runtime.session import ChatSession
from agents.sandbox import detect_sandbox, probe_sandbox
from conversations.services import create_conversation
from orkestrel.core import create_binary_content, create_file, create_text_content
from workspaces.stores import DjangoWorkspaceStore

from .commands import command_row, manager_for
from .helpers import call, tool_context

SANDBOX = detect_sandbox()
pytestmark = pytest.mark.skipif(
    not SANDBOX.available, reason=f"no OS sandbox here: {SANDBOX.description}"
)
PORT = {"type": "object", "properties": {"port": {"type": "integer"}}}
# One transparent pixel: a binary file must pass through a call untouched.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def test_the_probe_names_bubblewrap_and_how_it_confines():
    assert SANDBOX.description.startswith("bubblewrap ")
    assert SANDBOX.description.endswith(("(user namespace)", "(root, no user namespace)"))
    assert probe_sandbox() == SANDBOX


# -- the file system --


@pytest.fixture
def outside() -> Iterator[Path]:
    """A directory the server may write to, outside every place the sandbox makes private."""
    home = Path.home()
    if not os.access(home, os.W_OK):
        pytest.skip(f"no writable directory outside the private ones ({home} is read-only)")
    path = Path(tempfile.mkdtemp(prefix=".orkestrel-sandbox-test-", dir=home))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def workspace_context(*files):
    context = tool_context()
    context.agent_context.workspaces.add(id="main", seed=list(files))
    return context, context.agent_context.workspaces.active


def text(path: str, body: str):
    return create_file(path, create_text_content(body))


async def test_a_write_outside_the_folder_fails_while_one_inside_works(outside):
    context, workspace = workspace_context()
    script = 'echo in > inside.txt; echo out > "$1/escaped.txt"; echo "rc=$?"'
    row = command_row("sh", ["-c", script, "sh", str(outside)], workdir="workspace")
    result = await call(manager_for(row, context, sandbox=SANDBOX), "cmd")
    assert result.value["stdout"] == "rc=2\n"
    assert "Read-only file system" in result.value["stderr"]
    assert not (outside / "escaped.txt").exists()
    assert workspace.read("inside.txt") == "in\n"
    assert result.value["files"] == {"created": ["inside.txt"], "modified": [], "deleted": []}


async def test_the_temporary_directory_is_private_to_the_call():
    probe = f"orkestrel-probe-{uuid.uuid4().hex}"
    row = command_row("sh", ["-c", f"echo x > /tmp/{probe} && ls -A /tmp"], safe=True)
    result = await call(manager_for(row, sandbox=SANDBOX), "cmd")
    assert probe in result.value["stdout"].split()
    assert not os.path.exists(f"/tmp/{probe}")


async def test_the_project_directory_is_hidden_and_read_only():
    base = str(settings.BASE_DIR)
    script = 'ls -A "$1"; echo x > "$1/planted" || echo refused'
    row = command_row("sh", ["-c", script, "sh", base], safe=True)
    result = await call(manager_for(row, sandbox=SANDBOX), "cmd")
    assert result.value["stdout"] == "refused\n"  # an empty listing, then the refused write
    assert "Read-only file system" in result.value["stderr"]
    assert not os.path.exists(os.path.join(base, "planted"))


# -- the network --


@pytest.fixture
def listener() -> Iterator[tuple[int, list[bytes], threading.Event]]:
    """A TCP server on loopback recording what each connection sends (``arrived`` is set at
    the first): the sender may be gone before this thread accepts its connection."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    received: list[bytes] = []
    stop, arrived = threading.Event(), threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = server.accept()
            except TimeoutError:
                continue
            with connection:
                connection.settimeout(2)
                received.append(connection.recv(100))
                arrived.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], received, arrived
    finally:
        stop.set()
        thread.join()
        server.close()


SEND = ["-c", 'echo hello > "/dev/tcp/127.0.0.1/$1" && echo sent', "bash", "{port}"]


async def test_a_command_without_network_cannot_reach_a_loopback_server(listener):
    port, received, _ = listener
    row = command_row("bash", SEND, parameters=PORT, safe=True)
    result = await call(manager_for(row, sandbox=SANDBOX), "cmd", port=port)
    assert result.value["exit_code"] != 0 and result.value["stdout"] == ""
    assert "connect" in result.value["stderr"]
    assert received == []


async def test_a_command_allowed_the_network_reaches_it(listener):
    port, received, arrived = listener
    row = command_row("bash", SEND, parameters=PORT, safe=True, allow_network=True)
    result = await call(manager_for(row, sandbox=SANDBOX), "cmd", port=port)
    assert result.value["stdout"] == "sent\n" and result.value["exit_code"] == 0
    assert await asyncio.to_thread(arrived.wait, 10)
    assert received == [b"hello\n"]


# -- files back into the workspace --


async def test_output_and_file_edits_come_back_into_the_workspace():
    context, workspace = workspace_context(
        text("notes.txt", "one\n"),
        text("old.txt", "bye\n"),
        text("keep.md", "same\n"),
        create_file("pixel.png", create_binary_content(PIXEL, "image/png")),
    )
    script = (
        "cat notes.txt; echo two >> notes.txt; mkdir -p sub && echo new > sub/new.md; "
        "rm old.txt; printf '\\377\\376' > blob.bin; ln -s /etc/passwd link"
    )
    row = command_row("sh", ["-c", script], workdir="workspace")
    written = []
    workspace.emitter.on("write", lambda file: written.append(file.path))
    result = await call(manager_for(row, context, sandbox=SANDBOX), "cmd")
    assert result.value["stdout"] == "one\n" and result.value["exit_code"] == 0
    assert result.value["files"] == {
        "created": ["sub/new.md"],
        "modified": ["notes.txt"],
        "deleted": ["old.txt"],
        "skipped": [
            {"path": "blob.bin", "reason": "not UTF-8 text"},
            {"path": "link", "reason": "not a regular file"},
        ],
    }
    assert {file.path for file in workspace.files()} == {
        "notes.txt",
        "keep.md",
        "pixel.png",
        "sub/new.md",
    }
    assert workspace.read("notes.txt") == "one\ntwo\n"
    assert workspace.read("sub/new.md") == "new\n"
    assert workspace.file("pixel.png").content.data == PIXEL
    assert written == ["notes.txt", "sub/new.md"]  # the run's session listens to these


async def test_a_command_that_timed_out_brings_no_files_back():
    context, workspace = workspace_context(text("a.txt", "a\n"))
    row = command_row("sh", ["-c", "echo half > made.txt; rm a.txt; sleep 30"], workdir="workspace")
    row.timeout = 0.5
    result = await call(manager_for(row, context, sandbox=SANDBOX), "cmd")
    assert result.value["timed_out"] is True
    assert result.value["files"]["not_brought_back"] == "the command timed out"
    assert [file.path for file in workspace.files()] == ["a.txt"]


@pytest.mark.django_db(transaction=True)
async def test_the_runs_commit_saves_what_a_command_wrote():
    user, conversation = await sync_to_async(conversation_with_a_command_tool)()
    session = await ChatSession.open(str(conversation.id), user.id)
    session.workspaces.active.write("in.txt", "hello\n")
    await session.commit()
    result = await session.agent.context.tools.execute(
        {"id": "call-1", "name": "stamp", "arguments": {}}
    )
    assert result.error is None and result.value["files"]["created"] == ["out.txt"]
    await session.commit()
    stored = await sync_to_async(DjangoWorkspaceStore(owner=user.id).get_sync)(
        session.spec.workspace_id
    )
    assert {file["path"]: file["content"]["text"] for file in stored["files"]} == {
        "in.txt": "hello\nmore\n",
        "out.txt": "hello\n",
    }


def conversation_with_a_command_tool():
    user = get_user_model().objects.create_user("ada", password="pw-ada-123")
    profile = ensure_demo_profile()
    tool = ToolRow.objects.create(
        name="stamp",
        kind=ToolRow.Kind.COMMAND,
        program="sh",
        argv=["-c", "cat in.txt > out.txt; echo more >> in.txt"],
        workdir=ToolRow.Workdir.WORKSPACE,
    )
    profile.tools.add(tool)
    return user, create_conversation(user=user, profile=profile, title="t")
