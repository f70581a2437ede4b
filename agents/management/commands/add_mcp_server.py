"""Register an MCP server (or update the one of that name) after checking that it answers.

    python manage.py add_mcp_server github https://mcp.example.com/mcp \\
        --bearer-env GITHUB_MCP_TOKEN --header X-Tenant=acme --profile coder
    python manage.py add_mcp_server git --command "mcp-server-git --repository /srv/repo"

A stdio server (``--command``: a shell-like command line, or a JSON list of the program and
its arguments) runs under the command tools' sandbox; ``--network`` lets it reach the network.

Nothing is written unless the server answers with these settings: a server that cannot be
reached or refuses the credentials leaves the database as it was and exits non-zero. Named
profiles get the server; profiles that had it keep it. The tools found are printed one per
line, as the model sees them (``<name>__<tool>``).
"""

from __future__ import annotations

import json
import shlex
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.utils import timezone

from agents.mcp.check import check_server
from agents.mcp.endpoint import endpoint_of
from agents.mcp.names import tool_name
from agents.models import AgentProfile, McpServer


def _header(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not name.strip():
        raise CommandError(f"--header {text!r}: write it as NAME=VALUE")
    return name.strip(), value.strip()


def _command_line(text: str) -> list[str]:
    """``--command``'s program and arguments: a JSON list, else split as a shell would."""
    try:
        parts: Any = json.loads(text) if text.lstrip().startswith("[") else shlex.split(text)
    except (ValueError, json.JSONDecodeError) as error:
        raise CommandError(f"--command {text!r}: {error}") from None
    if not isinstance(parts, list) or not parts or not all(isinstance(p, str) for p in parts):
        raise CommandError(f"--command {text!r}: give the program and its arguments")
    return parts


class Command(BaseCommand):
    help = (
        "Register or update an MCP server (Streamable HTTP, or a stdio --command), checked "
        "first; print its tools."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="The server's name: a-z, 0-9, _ and - (a tool prefix).")
        parser.add_argument(
            "url",
            nargs="?",
            default="",
            help="Its Streamable HTTP endpoint, e.g. https://host/mcp.",
        )
        parser.add_argument(
            "--command",
            dest="stdio",
            metavar="COMMAND",
            help="Instead of a URL: the stdio server's command line (or a JSON list), run "
            "under the command tools' sandbox.",
        )
        parser.add_argument(
            "--network",
            action="store_true",
            help="Let a stdio server reach the network (off unless given).",
        )
        parser.add_argument(
            "--bearer-env",
            metavar="VAR",
            help="The environment variable holding its bearer token (e.g. GITHUB_MCP_TOKEN).",
        )
        parser.add_argument(
            "--header",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="A header sent with every request (repeatable; replaces the stored ones).",
        )
        parser.add_argument(
            "--profile",
            action="append",
            default=[],
            metavar="SLUG",
            help="A profile that uses the server (repeatable; others keep it).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        name, url, stdio = options["name"], options["url"], options["stdio"]
        if bool(url) == bool(stdio):
            raise CommandError("give the server's URL or its --command, one of the two")
        row = McpServer.objects.filter(name=name).first() or McpServer(name=name)
        row.url = url
        row.command = _command_line(stdio) if stdio else None
        row.network = bool(stdio) and options["network"]
        if options["bearer_env"]:
            row.auth, row.bearer_env = McpServer.Auth.BEARER_ENV, options["bearer_env"]
        if options["header"]:
            row.headers = dict(_header(text) for text in options["header"])
        elif stdio:
            row.headers = {}  # headers belong to a URL server; one turned stdio drops them
        slugs = list(dict.fromkeys(options["profile"]))
        profiles = list(AgentProfile.objects.filter(slug__in=slugs))
        missing = sorted(set(slugs) - {profile.slug for profile in profiles})
        if missing:
            raise CommandError(f"no agent profile named {', '.join(map(repr, missing))}")
        try:
            row.full_clean()
        except ValidationError as error:
            problems = "; ".join(
                f"{field}: {' '.join(messages)}" for field, messages in error.message_dict.items()
            )
            raise CommandError(f"MCP server {name!r} is not valid: {problems}") from None
        result = check_server(endpoint_of(row, related=False))
        if not result.ok:
            raise CommandError(f"nothing registered: {result.detail}")
        created = row.pk is None
        with transaction.atomic():
            row.offered = [tool.as_json() for tool in result.tools]
            row.refreshed = timezone.now()
            row.save()
            row.profiles.add(*profiles)
        for tool in result.tools:
            self.stdout.write(tool_name(name, tool.name))
        verb = "registered" if created else "updated"
        self.stderr.write(f"MCP server {name!r} {verb}: {result.detail}")
