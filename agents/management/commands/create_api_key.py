"""Issue an API key for a user from the shell; the key alone is the last line printed."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import ApiKey


class Command(BaseCommand):
    help = (
        "Create an API key for a user and print it (shown once: only its hash is stored). "
        "The key is alone on the last line, for scripts: `... | tail -n 1`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="the user the key acts as")
        parser.add_argument("--name", default="command line", help="what the key is for")

    def handle(self, *args: Any, username: str, name: str, **options: Any) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive: its keys would be refused")
        try:
            key, raw = ApiKey.objects.issue(user=user, name=name)
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        self.stdout.write(
            f"Created API key {key.name!r} ({key.display_prefix}) for {username!r}. "
            "It is shown once; keep it secret:"
        )
        self.stdout.write(raw)
