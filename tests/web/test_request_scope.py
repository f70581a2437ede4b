"""Request ids: every answer carries ``X-Request-ID`` (a client's well-formed one kept, else a
new one), and every line the app logs while handling the request names it.

Requests go through the project's ASGI application, as under Daphne: Django logs a refusal
(``Not Found: ...``) after the middleware returned, and that line must name the request too.
"""

from __future__ import annotations

import contextvars
import logging
import re

import httpx
import pytest

from orkestrel.asgi import application
from orkestrel.request_scope import LogContextFilter, bind_run

pytestmark = pytest.mark.django_db(transaction=True)

NEW_ID = re.compile(r"[0-9a-f]{32}")


@pytest.fixture
async def http():
    transport = httpx.ASGITransport(app=application)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        yield client


class Kept(logging.Handler):
    """The records the app logs, as the console handler sees them (its filter attached)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.addFilter(LogContextFilter())
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def kept():
    handler = Kept()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


@pytest.mark.parametrize("path", ["/healthz", "/api/profiles/", "/v1/models", "/api/nothing/"])
async def test_every_answer_carries_a_new_request_id(http, path):
    first, second = (await http.get(path), await http.get(path))
    assert NEW_ID.fullmatch(first.headers["X-Request-ID"])
    assert first.headers["X-Request-ID"] != second.headers["X-Request-ID"]


async def test_a_redirect_carries_one_too(http):
    response = await http.get("/api/conversations")
    assert response.status_code == 301 and NEW_ID.fullmatch(response.headers["X-Request-ID"])


@pytest.mark.parametrize("sent", ["req-42", "4bf92f3577b34da6a3ce929d0e0e4736", "a:b/c=d+e.f_g"])
async def test_a_well_formed_incoming_id_is_kept(http, sent):
    response = await http.get("/healthz", headers={"X-Request-ID": sent})
    assert response.headers["X-Request-ID"] == sent


@pytest.mark.parametrize("sent", ["two words", "x" * 200, "-leading-dash", 'a"quote', ""])
async def test_a_malformed_incoming_id_is_replaced(http, sent):
    response = await http.get("/healthz", headers={"X-Request-ID": sent})
    assert NEW_ID.fullmatch(response.headers["X-Request-ID"])


async def test_the_lines_logged_for_a_request_name_it(http, kept):
    response = await http.get("/api/nothing/", headers={"X-Request-ID": "trace-7"})
    assert response.status_code == 404
    lines = [r for r in kept.records if r.name == "django.request"]
    assert lines and all(r.request_id == "trace-7" for r in lines)
    assert all(r.context == " [request_id=trace-7]" for r in lines)
    formatted = logging.Formatter("%(message)s%(context)s").format(lines[0])
    assert formatted == "Not Found: /api/nothing/ [request_id=trace-7]"


def test_a_line_outside_any_request_names_none_and_a_run_names_its_run(kept):
    def log() -> None:
        logging.getLogger("orkestrel.test").warning("outside")
        bind_run(12)  # what a run's task does: its lines name it
        logging.getLogger("orkestrel.test").warning("in a run")

    contextvars.Context().run(log)  # a context of its own, as a run's task has
    outside, in_run = [r for r in kept.records if r.name == "orkestrel.test"]
    assert (outside.request_id, outside.run, outside.context) == ("-", "-", "")
    assert (in_run.run, in_run.context) == ("12", " [run=12]")
