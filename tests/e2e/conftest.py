"""Browser tests: a real Daphne server on a throwaway SQLite file, driven by Debian's Chromium.

pytest-django's ``live_server`` is WSGI only (no websockets), so the server is a subprocess and
these tests reach it over HTTP and websockets only: no ORM, no pytest-django database. The
server and the browser are package-scoped, so both are gone before the rest of the suite runs
(Playwright's sync API keeps an event loop of its own that async tests should not share).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.migrated import copy_sqlite
from tests.processes import log_tail, stop_group
from tests.shell_host import ShellError, ShellHost

from .openai_setup import (
    OPENAI_SETUP_CODE,
    UPSTREAM_PROFILE,
    UPSTREAM_PROMPT,
    sdk,
    shell_json,
)
from .upstream import (
    MODEL,
    FakeUpstream,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
REPO = Path(__file__).resolve().parents[2]
SCREENSHOTS = Path(__file__).resolve().parent / "screenshots"
# Slow enough to stop or reload mid-answer, fast enough for the whole folder to stay short.
WORD_DELAY = "0.05"
PASSWORDS = {"alice": "alice-e2e-Pass-7431", "bob": "bob-e2e-Pass-9152"}
START_TIMEOUT = 40.0
# Expectations wait on events; a 2-core CI box next to PostgreSQL and Redis can be slow.
TIMEOUT_MS = 15_000

# Run inside ``manage.py shell``: the schema, the real bootstrap (demo profile), two users, and
# a session for each (printed as JSON). Logging in through the form costs ~2 s of password
# hashing on this machine kind: only the login test pays it, the others start logged in.
SETUP_CODE = f"""
import io, json
from importlib import import_module
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth import get_user_model
from django.core.management import call_command
call_command("migrate", verbosity=0, interactive=False)
call_command("bootstrap", stdout=io.StringIO())
store = import_module(settings.SESSION_ENGINE).SessionStore
sessions = {{}}
for name, password in {PASSWORDS!r}.items():
    user = get_user_model().objects.create_user(username=name, password=password)
    session = store()
    session[SESSION_KEY] = str(user.pk)
    session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    session[HASH_SESSION_KEY] = user.get_session_auth_hash()
    session.create()
    sessions[name] = session.session_key
print(json.dumps({{"cookie": settings.SESSION_COOKIE_NAME, "sessions": sessions}}))
"""

# Installed in every page before its scripts: every distinct text of the answer element, in
# order, so a test can check that each partial it showed was a prefix of the final answer.
ANSWER_RECORDER = """
(() => {
  const seen = [];
  window.__answers = seen;
  const record = () => {
    const node = document.querySelector("[data-testid=answer]");
    const text = node ? node.textContent.trim() : "";
    if (text && seen[seen.length - 1] !== text) seen.push(text);
  };
  new MutationObserver(record).observe(document, {
    subtree: true, childList: true, characterData: true, attributes: true,
  });
})();
"""


@dataclass(frozen=True)
class Server:
    """The running Daphne subprocess."""

    url: str
    log: Path
    cookie: str  # the session cookie's name
    sessions: dict[str, str]  # username -> a logged-in session key
    env: dict[str, str]  # the server's environment (its database)

    host: ShellHost  # one Django process running the tests' snippets

    def shell(self, code: str) -> str:
        """Run ``code`` as ``manage.py shell -c`` would, against the server's database; its
        output."""
        try:
            return self.host.run(code)
        except ShellError as error:
            pytest.fail(f"manage.py shell failed:\n{error}")


def _shell(env: dict[str, str], code: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if done.returncode:
        pytest.fail(f"manage.py shell failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _server_env(database: Path) -> dict[str, str]:
    """A server's environment on a new SQLite file at ``database``, already migrated (a copy of
    the migrated template: ``tests.migrated``)."""
    copy_sqlite(database)
    env = dict(os.environ)
    env.pop("REDIS_URL", None)  # one process: the in-memory channel layer
    env.update(
        {
            "DATABASE_URL": f"sqlite:///{database}",
            "DEBUG": "false",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "ORKESTREL_DEMO_WORD_DELAY": WORD_DELAY,
            # No Celery worker serves these servers: their jobs run in the server.
            "ORKESTREL_JOBS_ON": "process",
            "DJANGO_SETTINGS_MODULE": "orkestrel.settings",
            "PYTHONUNBUFFERED": "1",
        }
    )
    return env


# The server as ``make run`` starts it (the Makefile's WEBSOCKET_LIMITS).
SERVER = (
    sys.executable,
    "-m",
    "orkestrel.server",
    "--websocket-max-message-size",
    "33554432",
    "--websocket-max-frame-size",
    "33554432",
)


def start_daphne(env: dict[str, str], log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """The project's Daphne (``orkestrel.server``) serving it with ``env``, once it answers
    ``/healthz``."""
    port = _free_port()
    with log.open("ab") as sink:
        process = subprocess.Popen(
            [*SERVER, "-b", "127.0.0.1", "-p", str(port), "orkestrel.asgi:application"],
            cwd=REPO,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: teardown kills it all
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"daphne exited with {process.returncode}:\n{log_tail(log)}")
        try:
            with urllib.request.urlopen(f"{url}/healthz", timeout=2) as response:
                if response.status == 200:
                    return process, url
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            stop_group(process)
            pytest.fail(f"daphne did not answer /healthz in {START_TIMEOUT}s:\n{log_tail(log)}")
        time.sleep(0.1)


@pytest.fixture(scope="package", autouse=True)
def chromium() -> Path:
    """Skip the whole folder, saying how to enable it, when there is no browser to drive."""
    if not CHROMIUM.exists():
        pytest.skip(
            "browser tests need Debian's chromium at /usr/bin/chromium: "
            "apt-get update && apt-get install -y chromium"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("browser tests need the playwright package (requirements-dev.txt)")
    return CHROMIUM


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Migrate a fresh SQLite file, bootstrap it, serve it with Daphne; stop it afterwards."""
    folder = tmp_path_factory.mktemp("e2e")
    env = _server_env(folder / "e2e.sqlite3")
    made = json.loads(_shell(env, SETUP_CODE).strip().splitlines()[-1])
    log = folder / "daphne.log"
    process, url = start_daphne(env, log)
    host = ShellHost(env)
    try:
        yield Server(
            url=url,
            log=log,
            cookie=made["cookie"],
            sessions=made["sessions"],
            env=env,
            host=host,
        )
    finally:
        host.close()
        stop_group(process)


@pytest.fixture(scope="package")
def browser(chromium: Path) -> Iterator[Any]:
    """One Chromium for the folder; each test gets fresh contexts from it."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    playwright = sync_playwright().start()
    try:
        instance = playwright.chromium.launch(executable_path=str(chromium), args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()
    finally:
        playwright.stop()


@pytest.fixture
def open_context(browser: Any, server: Server) -> Iterator[Callable[..., Any]]:
    """``open_context(user=None, **options)``: a browser context, closed after the test.

    With a ``user`` the context starts logged in (the session ``SETUP_CODE`` made). Every page
    records its answer texts (``window.__answers``); an uncaught script error or a server
    error (5xx) on any page fails the test.
    """
    contexts: list[Any] = []
    errors: list[str] = []

    def open_(user: str | None = None, **options: Any) -> Any:
        context = browser.new_context(base_url=server.url, **options)
        if user is not None:
            session = server.sessions[user]
            context.add_cookies([{"name": server.cookie, "value": session, "url": server.url}])
        context.set_default_timeout(TIMEOUT_MS)
        context.add_init_script(ANSWER_RECORDER)
        context.on("page", lambda page: page.on("pageerror", lambda exc: errors.append(str(exc))))
        context.on(
            "response",
            lambda response: response.status >= 500
            and errors.append(f"{response.status} from {response.url}"),
        )
        contexts.append(context)
        return context

    yield open_
    for context in contexts:
        context.close()
    assert not errors, f"errors in the browser: {errors}"


@pytest.fixture
def alice(open_context: Callable[..., Any]) -> Any:
    """A page logged in as alice, at desktop width."""
    return open_context("alice", viewport={"width": 1280, "height": 800}).new_page()


@pytest.fixture(scope="package")
def passwords() -> dict[str, str]:
    """The users' passwords, for the test that logs in through the form."""
    return dict(PASSWORDS)


@pytest.fixture(scope="package")
def screenshots() -> Path:
    """Where the chat views are saved for a human to look at (not committed)."""
    SCREENSHOTS.mkdir(exist_ok=True)
    return SCREENSHOTS


# -- the OpenAI-compatible endpoints' tests: one fake upstream and one set of keys ---------------


@pytest.fixture(scope="package")
def upstream() -> Iterator[FakeUpstream]:
    """The fake OpenAI-compatible model server behind the ``upstream-agent`` profile."""
    with FakeUpstream() as fake:
        yield fake


@pytest.fixture(scope="package")
def keys(server: Server, upstream: FakeUpstream) -> dict[str, str]:
    """API keys by role; also creates the profile on the fake upstream."""
    return shell_json(
        server,
        OPENAI_SETUP_CODE,
        url=upstream.url,
        model=MODEL,
        slug=UPSTREAM_PROFILE,
        prompt=UPSTREAM_PROMPT,
    )


@pytest.fixture(scope="package")
def client(server: Server, keys: dict[str, str]) -> Iterator[openai.OpenAI]:
    """The official SDK as alice."""
    with sdk(server, keys["alice"]) as made:
        yield made


@pytest.fixture(scope="package")
def bob(server: Server, keys: dict[str, str]) -> Iterator[openai.OpenAI]:
    """The official SDK as bob."""
    with sdk(server, keys["bob"]) as made:
        yield made
