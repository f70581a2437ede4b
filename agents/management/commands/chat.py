"""Hold a conversation in the terminal against the real runtime (the same run manager)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any, TextIO

from asgiref.sync import sync_to_async
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import AgentProfile
from agents.runs import Busy, RunManager
from conversations.services import create_conversation


class Command(BaseCommand):
    help = "Chat with an agent profile in the terminal; /quit or end of input leaves."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("profile", help="the agent profile's slug")
        parser.add_argument("--user", help="username (default: the first operator)")
        parser.add_argument("--title", default="Terminal chat")
        # For call_command callers (tests, scripts): a stream to read lines from.
        parser.add_argument("--stdin", default=None, help=argparse.SUPPRESS)

    def handle(
        self, *args: Any, profile: str, user: str | None, title: str, **options: Any
    ) -> None:
        try:
            chosen = AgentProfile.objects.get(slug=profile, enabled=True)
        except AgentProfile.DoesNotExist:
            raise CommandError(f"no enabled agent profile {profile!r}") from None
        users = get_user_model()
        person = (
            users.objects.filter(username=user).first()
            if user
            else users.objects.filter(is_superuser=True).order_by("id").first()
        )
        if person is None:
            raise CommandError("no such user (run `manage.py bootstrap` or pass --user)")
        conversation = create_conversation(user=person, profile=chosen, title=title)
        self.stdout.write(f"Conversation {conversation.id} with {chosen.name}. /quit to leave.")
        stdin: TextIO = options.get("stdin") or sys.stdin
        asyncio.run(self._loop(person.id, str(conversation.id), stdin))

    async def _loop(self, user_id: int, conversation_id: str, stdin: TextIO) -> None:
        # The terminal's own runs run here, whatever ORKESTREL_RUNS_ON says (it follows no layer).
        manager = RunManager(workers=False)
        done = asyncio.Event()

        async def show(frame: dict[str, Any]) -> None:
            kind = frame["type"]
            if kind == "token":
                self.stdout.write(frame["content"], ending="")
            elif kind == "think":
                self.stdout.write(self.style.HTTP_NOT_MODIFIED(frame["content"]), ending="")
            elif kind == "tool":
                call, result = frame["call"], frame["result"]
                outcome = result.get("error") if "error" in result else result.get("value")
                label = "denied" if frame["denied"] else ("error" if "error" in result else "→")
                self.stdout.write(
                    f"\n[tool {call['name']}({json.dumps(call['arguments'])}) {label} "
                    f"{json.dumps(outcome, default=str)[:300]}]"
                )
            elif kind in ("abort", "exhaust"):
                self.stdout.write(f"\n[{kind}]")
            elif kind == "error":
                self.stderr.write(f"\n[error {frame['code']}: {frame['message']}]")
            if kind in ("finish", "error"):
                done.set()

        manager.subscribe(conversation_id, show)
        loop = asyncio.get_running_loop()
        while True:
            self.stdout.write("\n> ", ending="")
            self.stdout.flush()
            line = await loop.run_in_executor(None, stdin.readline)
            if not line or line.strip() == "/quit":
                break
            text = line.rstrip("\n")
            if not text.strip():
                continue
            done.clear()
            try:
                await manager.start(user_id=user_id, conversation_id=conversation_id, content=text)
            except Busy as error:
                self.stderr.write(str(error))
                continue
            try:
                await manager.wait(conversation_id)
            except KeyboardInterrupt:
                manager.abort(conversation_id)
                await manager.wait(conversation_id)
            await manager.drain()
            await done.wait()
        await sync_to_async(lambda: None)()
