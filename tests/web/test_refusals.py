"""Refusals carry their own answer: every one names its ``code`` and HTTP ``status_code``, and
each front door maps the one base once: the REST API's exception handler (problem JSON), the
websocket's ``error`` frame, ``/v1``'s error. A new refusal needs no clause at any door."""

from __future__ import annotations

import inspect

import pytest
from rest_framework import status

import agents.runs.errors
import agents.runtime.skills
import agents.runtime.spec
import agents.runtime.summarizer
import conversations.approvals
import conversations.branches
import conversations.forks
import conversations.pending
from agents.api.errors import exception_handler
from agents.openai.errors import refused
from orkestrel.protocol import ErrorFrame
from orkestrel.refusals import Refusal

# The modules that define the run service's refusals (imported for their classes).
DEFINING = (
    agents.runs.errors,
    agents.runtime.skills,
    agents.runtime.spec,
    agents.runtime.summarizer,
    conversations.approvals,
    conversations.branches,
    conversations.forks,
    conversations.pending,
)


def every_refusal() -> list[type[Refusal]]:
    found: list[type[Refusal]] = []
    pending = list(Refusal.__subclasses__())
    while pending:
        cls = pending.pop()
        found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


class WornOut(Refusal):
    """A refusal no door has heard of."""

    code = "worn_out"
    status_code = status.HTTP_423_LOCKED


def test_every_refusal_names_its_code_and_an_error_status():
    refusals = [cls for cls in every_refusal() if cls.__module__ != __name__]
    assert len(refusals) >= 19
    for cls in refusals:
        if "code" in inspect.signature(cls.__init__).parameters:
            continue  # its code and status are the instance's (``ApprovalRefused``: ``decided``...)
        assert cls.code != Refusal.code, cls
        assert 400 <= cls.status_code < 600, cls


def test_a_new_refusal_is_answered_by_every_door_from_its_attributes():
    rest = exception_handler(WornOut("the widget is worn out"), {})
    assert rest is not None and rest.status_code == 423
    assert (rest.data["code"], rest.data["detail"]) == ("worn_out", "the widget is worn out")
    frame = ErrorFrame.refusing(WornOut("the widget is worn out"))
    assert (frame.code, frame.message) == ("worn_out", "the widget is worn out")
    v1 = refused(WornOut("the widget is worn out"), model="demo")
    assert (v1.status, v1.code, v1.message) == (423, "worn_out", "the widget is worn out")


@pytest.mark.parametrize(
    ("refusal", "answer"),
    [
        (agents.runs.errors.Busy("a reply is running"), (409, "busy", "a reply is running")),
        (
            agents.runs.errors.StartFailed("endpoint 'x' has no key"),
            (502, "run_failed", "The agent could not be started."),
        ),
        (
            conversations.pending.PendingFull("50 wait"),
            (429, "too_many_runs", "50 wait"),  # the REST code older than the refusal's own
        ),
        (
            conversations.approvals.ApprovalRefused("operator", "an operator decides"),
            (403, "operator_decides", "an operator decides"),
        ),
    ],
)
def test_the_rest_api_answers_a_refusal_with_its_status_and_code(refusal, answer):
    response = exception_handler(refusal, {})
    assert response is not None
    assert (response.status_code, response.data["code"], response.data["detail"]) == answer


def test_a_refusal_about_a_request_field_is_a_rest_validation_error_naming_it():
    response = exception_handler(agents.runs.errors.NothingToContinue("nothing yet"), {})
    assert response is not None and response.status_code == 400
    assert response.data["code"] == "invalid"
    assert response.data["errors"] == {"content": ["nothing yet"]}
    frame = ErrorFrame.refusing(agents.runs.errors.NothingToContinue("nothing yet"))
    assert frame.code == "nothing_to_continue"
