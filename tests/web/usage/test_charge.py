"""Which key a request's work is charged to: set by the door, tied to its request, carried to
a worker with the run's hand-off."""

from __future__ import annotations

from agents.runs.handoff import Handoff
from agents.usage.charge import KeyRef, charge_key, current_key
from orkestrel.request_scope import open_scope


def test_a_charged_key_holds_for_its_request_only():
    open_scope("first")
    charge_key(KeyRef(3, "ci"))
    assert current_key() == KeyRef(3, "ci")
    # The next request on the same thread (a session's) is charged to no key.
    open_scope("second")
    assert current_key() is None


def test_the_key_travels_to_a_worker_with_the_handoff():
    handoff = Handoff(
        run_id=1,
        user_id=2,
        conversation_id="c",
        message=None,
        nonce=None,
        title="",
        key=KeyRef(9, "laptop"),
    )
    assert Handoff.from_data(handoff.to_data()).key == KeyRef(9, "laptop")
    bare = Handoff(run_id=1, user_id=2, conversation_id="c", message=None, nonce=None, title="")
    assert Handoff.from_data(bare.to_data()).key is None
