"""Prepare a fresh install: an operator account, printed once."""

from __future__ import annotations

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the first operator account (printing its password once) if none exists."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args, username: str, **options) -> None:
        users = get_user_model()
        if users.objects.filter(is_superuser=True).exists():
            return
        password = secrets.token_urlsafe(12)
        users.objects.create_superuser(username=username, email="", password=password)
        # Shown once on purpose: the password is not stored anywhere in clear.
        self.stdout.write(
            self.style.SUCCESS(
                f"Created operator account {username!r} with password {password!r} "
                "(shown once; change it in the admin)."
            )
        )
