"""A migrated scratch database for the benchmarks that drive Django directly."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

__all__ = ["ROOT", "open_scratch_database"]


def open_scratch_database(database_url: str = "") -> tuple[tempfile.TemporaryDirectory, str]:
    """Set Django up on ``database_url`` (default: a new SQLite file) and migrate it.

    Returns the temporary directory (keep it alive while the file is used) and the URL.
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    scratch = tempfile.TemporaryDirectory(prefix="orkestrel-bench-")
    url = database_url or f"sqlite:///{Path(scratch.name) / 'bench.sqlite3'}"
    os.environ["DATABASE_URL"] = url
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    return scratch, url
