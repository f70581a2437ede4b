"""Create a (non-staff) user from the shell, so a fresh install has someone to issue keys to.

Without ``--password-stdin`` a random password is generated and printed once; with it, the
first line of standard input is the password (checked by ``AUTH_PASSWORD_VALIDATORS``), so it
never shows in the shell's history or the process list.
"""

from __future__ import annotations

import secrets
import sys
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = (
        "Create a user who can sign in to the chat and be issued API keys "
        "(`create_api_key <username>`). Prints a generated password once, unless "
        "--password-stdin reads one from standard input."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="the new user's name (letters, digits, @.+-_)")
        parser.add_argument("--email", default="", help="the user's email address")
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="read the password from the first line of standard input",
        )

    def handle(
        self, *args: Any, username: str, email: str, password_stdin: bool, **options: Any
    ) -> None:
        users = get_user_model()
        if users.objects.filter(username=username).exists():
            raise CommandError(f"user {username!r} exists already")
        user = users(username=username, email=email)
        try:
            user.full_clean(exclude=["password"])  # the username's characters, the email
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        if password_stdin:
            password = sys.stdin.readline().rstrip("\r\n")
            if not password:
                raise CommandError("no password on standard input")
            try:
                validate_password(password, user)
            except ValidationError as exc:
                raise CommandError(" ".join(exc.messages)) from None
        else:
            password = secrets.token_urlsafe(12)
        user.set_password(password)
        user.save()
        if password_stdin:
            self.stdout.write(f"Created user {username!r} with the password from standard input.")
            return
        # Shown once on purpose: only its hash is stored.
        self.stdout.write(
            f"Created user {username!r}. Their password is shown once; keep it or change it "
            "in the admin:"
        )
        self.stdout.write(password)
