import io

import pytest
from django.core.management import CommandError, call_command

from conversations.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


def test_chat_command_streams_an_answer_and_stores_the_conversation(user, fast_demo):
    out = io.StringIO()
    call_command(
        "chat", "demo", user="ada", stdin=io.StringIO("hello terminal\n/quit\n"), stdout=out
    )
    text = out.getvalue()
    assert "You said: hello terminal" in text
    contents = list(
        Message.objects.filter(conversation__owner=user)
        .order_by("position")
        .values_list("role", "content")
    )
    assert contents[0] == ("user", "hello terminal")
    assert contents[-1][0] == "assistant" and contents[-1][1].startswith("You said: hello terminal")


def test_chat_command_shows_tool_calls(user, fast_demo):
    out = io.StringIO()
    call_command("chat", "demo", user="ada", stdin=io.StringIO("list my files\n"), stdout=out)
    assert "[tool workspace(" in out.getvalue()


def test_chat_command_refuses_an_unknown_profile(user, fast_demo):
    with pytest.raises(CommandError, match="no enabled agent profile"):
        call_command("chat", "nope", user="ada", stdin=io.StringIO(""))
