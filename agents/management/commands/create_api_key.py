"""Issue an API key for a user from the shell; the key alone is the last line printed."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.models import ApiKey
from agents.models.keys import DEFAULT_SCOPES, SCOPES, parse_words
from conversations.services import enabled_profiles


class Command(BaseCommand):
    help = (
        "Create an API key for a user and print it (shown once: only its hash is stored). "
        "The key is alone on the last line, for scripts: `... | tail -n 1`."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("username", help="the user the key acts as")
        parser.add_argument("--name", default="command line", help="what the key is for")
        parser.add_argument(
            "--scopes",
            default=" ".join(DEFAULT_SCOPES),
            help=f"what the key may do, comma- or space-separated among {', '.join(SCOPES)} "
            f"(default: {' '.join(DEFAULT_SCOPES)})",
        )
        parser.add_argument(
            "--profiles",
            default=None,
            help="the profile slugs the key may use, comma- or space-separated "
            "(default: every profile the user may use)",
        )

    def handle(
        self,
        *args: Any,
        username: str,
        name: str,
        scopes: str,
        profiles: str | None,
        **options: Any,
    ) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user {username!r}")
        if not user.is_active:
            raise CommandError(f"user {username!r} is inactive: its keys would be refused")
        slugs = None if profiles is None else parse_words(profiles)
        if slugs:
            usable = set(enabled_profiles(user.pk).values_list("slug", flat=True))
            unknown = [slug for slug in slugs if slug not in usable]
            if unknown:
                raise CommandError(f"no profile {unknown[0]!r} that {username!r} may use")
        try:
            key, raw = ApiKey.objects.issue(
                user=user, name=name, scopes=parse_words(scopes), profiles=slugs
            )
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from None
        limits = f"scopes: {' '.join(key.scope_list)}"
        if key.profile_list is not None:
            limits += f"; profiles: {' '.join(key.profile_list)}"
        self.stdout.write(
            f"Created API key {key.name!r} ({key.display_prefix}) for {username!r} ({limits}). "
            "It is shown once; keep it secret:"
        )
        self.stdout.write(raw)
