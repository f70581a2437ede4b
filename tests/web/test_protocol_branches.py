"""The branch frames of the protocol: what ``regenerate``, ``edit`` and ``select_branch`` may
carry, and what is refused before anything runs."""

from __future__ import annotations

import json

import pytest

from orkestrel.protocol import (
    ClientEdit,
    ClientRegenerate,
    ClientSelectBranch,
    FrameError,
    parse_client_frame,
)


def parse(**frame: object) -> object:
    return parse_client_frame(json.dumps(frame))


def test_branch_frames_parse_into_their_dataclasses():
    assert parse(type="regenerate", message="m1") == ClientRegenerate(message="m1")
    assert parse(type="edit", message="m1", content="new") == ClientEdit(
        message="m1", content="new"
    )
    assert parse(type="select_branch", point="", index=2) == ClientSelectBranch(point="", index=2)


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "regenerate"},
        {"type": "regenerate", "message": ""},
        {"type": "regenerate", "message": 7},
        {"type": "edit", "message": "m1", "content": "   "},
        {"type": "edit", "message": "m1"},
        {"type": "select_branch", "point": "m1", "index": 0},
        {"type": "select_branch", "point": "m1", "index": True},
        {"type": "select_branch", "index": 1},
    ],
)
def test_a_malformed_branch_frame_is_invalid(frame):
    with pytest.raises(FrameError) as refused:
        parse(**frame)
    assert refused.value.code == "invalid"
