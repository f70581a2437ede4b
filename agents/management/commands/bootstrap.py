"""Prepare an install: close interrupted runs; on a fresh database, a demo and an operator."""

from __future__ import annotations

import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandParser
from django.db import transaction

from agents.models import AgentProfile, ProviderEndpoint, Tool
from agents.runs import close_interrupted
from agents.runtime.registry import builtin_tools


def ensure_demo_profile() -> AgentProfile | None:
    """Create the offline demo endpoint, the built-in tool rows and a default demo profile.

    Only on a database without any profile: an operator's configuration is never touched.
    """
    if AgentProfile.objects.exists():
        return None
    with transaction.atomic():
        endpoint, _ = ProviderEndpoint.objects.get_or_create(
            name="demo",
            defaults={"kind": ProviderEndpoint.Kind.SCRIPTED, "base_url": "", "models": ["echo"]},
        )
        tools = []
        for name in builtin_tools.names():
            entry = builtin_tools.get(name)
            assert entry is not None
            tool, _ = Tool.objects.get_or_create(
                name=name,
                defaults={
                    "kind": Tool.Kind.BUILTIN,
                    "description": entry.description,
                    "parameters": dict(entry.parameters),
                },
            )
            # Every built-in gets its row (operators add it to profiles); the demo may
            # delegate to no profile, so it is not offered ``delegate``.
            if name != "delegate":
                tools.append(tool)
        profile = AgentProfile(
            slug="demo",
            name="Demo (offline)",
            description="An offline scripted model: no model server needed.",
            system_prompt="You are a helpful assistant.",
            model=f"{endpoint.name}/echo",
            is_default=True,
            context_window=8000,
        )
        profile.full_clean()
        profile.save()
        profile.tools.set(tools)
    return profile


class Command(BaseCommand):
    help = (
        "Close runs a previous process left unfinished; on a fresh database create the demo "
        "profile and the first operator account (printing its password once)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--username", default="admin")

    def handle(self, *args: Any, username: str, **options: Any) -> None:
        # Their messages sent meanwhile start the next run once the server runs (its sweep).
        closed = len(close_interrupted())
        if closed:
            self.stdout.write(f"Closed {closed} interrupted run(s), keeping their partial text.")
        if ensure_demo_profile() is not None:
            self.stdout.write("Created the offline demo profile 'demo'.")
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
