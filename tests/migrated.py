"""Fresh databases for the tests that serve the app from processes of their own (the browser
tests' servers, the Celery workers' stacks, two web processes): copies of a migrated one.

Migrating a new database runs every migration again, seconds of CPU per database on a 2-core
machine; a copy takes a fraction of a second. On PostgreSQL the template is a database
(``CREATE DATABASE … TEMPLATE``), on SQLite a file; both are named by a hash of the migration
files, so a changed migration makes a new one, and a lock lets one pytest-xdist worker build
it while the others wait. The tests still run ``migrate`` on their copy, which then has
nothing to do.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg

__all__ = ["copy_sqlite", "create_database", "drop_database"]

REPO = Path(__file__).resolve().parents[1]
PREFIX = "orkestrel_template_"
# Any number the suite's other advisory locks do not use.
LOCK = 0x6F726B74


def _admin(base: str) -> str:
    parts = urlsplit(base)
    return urlunsplit(("postgresql", parts.netloc, "/postgres", "", ""))


def _with_name(base: str, name: str) -> str:
    parts = urlsplit(base)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, ""))


def _migrations_hash() -> str:
    digest = hashlib.sha256()
    for path in sorted(REPO.glob("*/migrations/*.py")):
        digest.update(path.relative_to(REPO).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _template_name() -> str:
    return PREFIX + _migrations_hash()


def _migrate(url: str) -> None:
    env = {**os.environ, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "orkestrel.settings"}
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"],
        cwd=REPO,
        env=env,
        check=True,
        timeout=600,
    )


def create_database(base: str, prefix: str) -> tuple[str, str]:
    """A new migrated database on ``base``'s server (a ``postgres://`` URL): its URL and name."""
    template = _template_name()
    name = f"{prefix}{uuid.uuid4().hex[:12]}"
    with psycopg.connect(_admin(base), autocommit=True) as admin:
        admin.execute("SELECT pg_advisory_lock(%s)", (LOCK,))
        try:
            found = admin.execute(
                "SELECT datname FROM pg_database WHERE datname LIKE %s", (PREFIX + "%",)
            ).fetchall()
            if (template,) not in found:
                building = f"{template}_building"
                admin.execute(f'DROP DATABASE IF EXISTS "{building}" WITH (FORCE)')
                admin.execute(f'CREATE DATABASE "{building}"')
                _migrate(_with_name(base, building))
                admin.execute(f'ALTER DATABASE "{building}" RENAME TO "{template}"')
                for (stale,) in found:
                    admin.execute(f'DROP DATABASE IF EXISTS "{stale}" WITH (FORCE)')
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
        finally:
            admin.execute("SELECT pg_advisory_unlock(%s)", (LOCK,))
    return _with_name(base, name), name


def drop_database(base: str, name: str) -> None:
    """Drop a database ``create_database`` made, whoever is still connected to it."""
    with psycopg.connect(_admin(base), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_sqlite(target: Path) -> None:
    """Make ``target`` a migrated SQLite database (a copy of this checkout's template file)."""
    folder = Path(tempfile.gettempdir())
    template = folder / f"{PREFIX}{_migrations_hash()}.sqlite3"
    with (folder / f"{PREFIX}sqlite.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not template.exists():
            building = template.with_suffix(f".{os.getpid()}.building")
            building.unlink(missing_ok=True)
            _migrate(f"sqlite:///{building}")
            building.rename(template)
            for stale in folder.glob(f"{PREFIX}*.sqlite3"):
                if stale != template:
                    stale.unlink(missing_ok=True)
        shutil.copyfile(template, target)
