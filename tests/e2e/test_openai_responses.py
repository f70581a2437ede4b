"""``/v1/responses`` through the official ``openai`` SDK, against the served app: stored
conversations continued by ``previous_response_id``, streaming, retrieval and deletion."""

from __future__ import annotations

import openai
import pytest
from openai.types.responses import (
    ResponseCompletedEvent,
    ResponseCreatedEvent,
    ResponseTextDeltaEvent,
    ResponseTextDoneEvent,
)

from .conftest import Server
from .openai_setup import (
    DEMO,
    UPSTREAM_PROFILE,
    error_body,
    marker,
    recorded,
)
from .upstream import (
    ECHO,
    FakeUpstream,
)

pytestmark = pytest.mark.e2e

# --- the Responses API -------------------------------------------------------------------------


def test_a_response_completes_and_a_follow_up_continues_its_stored_conversation(
    client: openai.OpenAI, upstream: FakeUpstream, server: Server
) -> None:
    probe = marker()
    first = client.responses.create(model=UPSTREAM_PROFILE, input=f"First question {probe}")
    assert first.object == "response"
    assert first.status == "completed"
    assert first.output_text == f"{ECHO}First question {probe}"

    second = client.responses.create(
        model=UPSTREAM_PROFILE,
        input=f"Second question {probe}",
        previous_response_id=first.id,
    )
    assert second.status == "completed"
    assert second.id != first.id
    assert second.output_text == f"{ECHO}Second question {probe}"
    # The client sent only the new input; the server brought the earlier turn along.
    sent = upstream.requests_mentioning(probe)[-1]["messages"]
    turns = [(m["role"], m["content"]) for m in sent if m["role"] in ("user", "assistant")]
    assert turns[-3:] == [
        ("user", f"First question {probe}"),
        ("assistant", f"{ECHO}First question {probe}"),
        ("user", f"Second question {probe}"),
    ]
    record = recorded(server, probe)
    assert len(record["conversations"]) == 1  # both questions are in one conversation
    assert record["origin"] == "openai"


def test_a_response_on_the_demo_profile_is_retrieved_then_deleted(
    client: openai.OpenAI,
) -> None:
    said = f"Keep this {marker()}"
    made = client.responses.create(model=DEMO, input=said)
    assert made.status == "completed"
    assert made.output_text.startswith(f"You said: {said}")
    assert made.usage is not None and made.usage.total_tokens > 0

    again = client.responses.retrieve(made.id)
    assert (again.id, again.status, again.output_text) == (made.id, "completed", made.output_text)

    client.responses.delete(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(made.id)


def test_a_streamed_response_sends_created_deltas_and_completed_in_order(
    client: openai.OpenAI,
) -> None:
    said = f"Stream a response {marker()}"
    with client.responses.create(model=DEMO, input=said, stream=True) as stream:
        events = list(stream)
    types = [event.type for event in events]
    assert types[0] == "response.created"
    assert types[-1] == "response.completed"
    first_delta = types.index("response.output_text.delta")
    assert types.index("response.output_item.added") < first_delta
    assert first_delta < types.index("response.output_text.done") < len(types) - 1
    numbers = [event.sequence_number for event in events]
    assert numbers == sorted(set(numbers))  # strictly increasing
    streamed = "".join(event.delta for event in events if isinstance(event, ResponseTextDeltaEvent))
    assert streamed.startswith(f"You said: {said}")
    done = next(event for event in events if isinstance(event, ResponseTextDoneEvent))
    assert done.text == streamed
    created, completed = events[0], events[-1]
    assert isinstance(created, ResponseCreatedEvent)
    assert isinstance(completed, ResponseCompletedEvent)
    assert completed.response.status == "completed"
    assert completed.response.id == created.response.id
    assert completed.response.output_text == streamed


def test_an_unstored_response_can_neither_be_retrieved_nor_continued_but_is_recorded(
    client: openai.OpenAI, server: Server
) -> None:
    probe = marker()
    made = client.responses.create(model=DEMO, input=f"Forget this {probe}", store=False)
    assert made.status == "completed"
    assert made.output_text
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id)
    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model=DEMO, input="And then?", previous_response_id=made.id)
    error_body(raised.value)
    record = recorded(server, probe)
    assert (record["origin"], record["owner"]) == ("openai", "alice")
    assert {run["status"] for run in record["runs"]} == {"done"}


def test_another_users_response_is_not_found_and_cannot_be_continued(
    client: openai.OpenAI, bob: openai.OpenAI
) -> None:
    made = client.responses.create(model=DEMO, input=f"Mine only {marker()}")
    with pytest.raises(openai.NotFoundError):
        bob.responses.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        bob.responses.delete(made.id)
    with pytest.raises(openai.BadRequestError):
        bob.responses.create(model=DEMO, input="Let me in", previous_response_id=made.id)
    assert client.responses.retrieve(made.id).output_text == made.output_text


def test_continuing_a_response_that_is_still_running_is_a_conflict(
    client: openai.OpenAI,
) -> None:
    with client.responses.create(
        model=DEMO, input=f"Take your time {marker()}", stream=True
    ) as stream:
        events = iter(stream)
        created = next(events)
        assert created.type == "response.created"
        with pytest.raises(openai.ConflictError) as raised:
            client.responses.create(
                model=DEMO, input="Are you done?", previous_response_id=created.response.id
            )
        error_body(raised.value)
        rest = list(events)
    assert rest[-1].type == "response.completed"
