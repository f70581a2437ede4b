"""An import's text (issue 30, item 5): a NUL or a lone surrogate in any record is refused
naming its line and field, and nothing is stored (on PostgreSQL it was a 500)."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError

from agents.management.commands.bootstrap import ensure_demo_profile
from conversations.models import Conversation, Message
from conversations.transfer import import_records

pytestmark = pytest.mark.django_db

HEAD = {"type": "conversation", "title": "t", "profile": "demo", "summary": None}
MESSAGE = {"type": "message", "section": None, "id": "m1", "role": "user", "content": "hello"}


@pytest.mark.parametrize(
    ("records", "refusal"),
    [
        ([{**HEAD, "profile": "de\x00mo"}], "line 1: 'profile' holds a NUL character."),
        ([{**HEAD, "title": "\udc00"}], "line 1: 'title' holds an unpaired surrogate."),
        ([HEAD, {**MESSAGE, "content": "a\x00b"}], "line 2: 'content' holds a NUL character."),
        (
            [
                HEAD,
                {
                    **MESSAGE,
                    "role": "assistant",
                    "calls": [{"id": "c", "name": "n", "arguments": {"k": "\x00"}}],
                },
            ],
            "line 2: 'calls[0].arguments.k' holds a NUL character.",
        ),
        ([HEAD, {**MESSAGE, "id": "m\x00"}], "line 2: 'id' holds a NUL character."),
    ],
)
def test_unstorable_text_in_a_record_is_refused_naming_its_line(user, records, refusal):
    ensure_demo_profile()
    with pytest.raises(ValidationError) as refused:
        import_records(user=user, lines=[json.dumps(record) for record in records])
    assert refused.value.message_dict == {"records": [refusal]}
    assert not Conversation.objects.exists() and not Message.objects.exists()
