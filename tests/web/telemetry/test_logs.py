"""JSON log lines (``LOG_FORMAT=json``): one object a line, each with the ids of the request,
run, conversation and trace it was written for (``null`` where it has none)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from orkestrel.asgi import application
from orkestrel.request_scope import LogContextFilter
from orkestrel.telemetry.asgi import traced
from orkestrel.telemetry.logs import JsonFormatter
from tests.telemetry import spans  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)

REPO = Path(__file__).resolve().parents[3]


class Lines(logging.Handler):
    """What the console handler writes with ``LOG_FORMAT=json``: its filter, JSON lines."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(LogContextFilter())
        self.setFormatter(JsonFormatter())
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def lines():
    handler = Lines()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler.lines
    finally:
        root.removeHandler(handler)


async def test_a_request_line_carries_its_request_and_trace_ids(
    lines,
    spans,  # noqa: F811
):
    transport = httpx.ASGITransport(app=traced(application))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        answer = await client.get("/no-such-page", headers={"X-Request-ID": "req-json-1"})
    assert answer.status_code == 404
    (line,) = [json.loads(text) for text in lines if "no-such-page" in text]
    (server,) = spans.get_finished_spans()
    assert line["level"] == "WARNING" and line["logger"] == "django.request"
    assert line["message"] == "Not Found: /no-such-page"
    assert line["request_id"] == "req-json-1"
    assert line["trace_id"] == format(server.context.trace_id, "032x")
    assert (line["run_id"], line["conversation_id"]) == (None, None)
    assert line["time"].endswith("+00:00")


def test_an_exception_goes_in_the_line_as_text(lines):
    try:
        raise ValueError("broken on purpose")
    except ValueError:
        logging.getLogger("orkestrel.tests").exception("it failed")
    line = json.loads(lines[-1])
    assert line["message"] == "it failed"
    assert "ValueError: broken on purpose" in line["exc_info"]


def test_log_format_json_makes_the_console_write_json_lines_and_text_stays_the_default():
    code = (
        "import django, logging; django.setup(); "
        "logging.getLogger('orkestrel.tests').warning('hello %s', 'there')"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "orkestrel.settings", "LOG_FORMAT": "json"}
    env.setdefault("SECRET_KEY", "json-logs-tests-only")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    line = json.loads(done.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello there" and line["logger"] == "orkestrel.tests"
    assert line["request_id"] is None
    env.pop("LOG_FORMAT")
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.stderr.strip().splitlines()[-1] == "WARNING orkestrel.tests: hello there"
