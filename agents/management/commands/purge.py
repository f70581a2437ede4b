"""``manage.py purge [--dry-run]``: delete what is past its retention, and say how much.

Prints one line per kind (``conversations: 3``) and the total; ``--dry-run`` counts what would
go and changes nothing. The usage ledger's totals are never touched.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandParser
from django.utils import timezone

from agents.retention import purge, record


class Command(BaseCommand):
    help = "Delete the records past their retention (ORKESTREL_RETAIN_*_DAYS, per profile)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Count what would be deleted; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = bool(options["dry_run"])
        now = timezone.now()
        result = purge(now=now, dry_run=dry_run)
        if not dry_run:
            record(result, now)
        verb = "would delete" if dry_run else "deleted"
        for kind, count in result.counts.items():
            self.stdout.write(f"{kind}: {count}")
        self.stdout.write(f"total {verb}: {result.total}")
