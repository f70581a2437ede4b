"""What the OpenAI SDK tests share: the fake upstream's profile, keys, and reading back
what the operator sees (``manage.py shell`` against the served app's database).
"""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any

import openai
from openai.types.chat import (
    ChatCompletionChunk,
    ChatCompletionFunctionToolParam,
)

from .upstream import (
    WEATHER_TOOL,
)

if TYPE_CHECKING:
    from .conftest import Server


DEMO = "demo"
UPSTREAM_PROFILE = "upstream-agent"
UPSTREAM_PROMPT = "You are the weather desk of orkestrel's end-to-end tests."
DEMO_THINKING = "A demo reply: echo the message and explain."
DEMO_TAIL = "Anthropic or Ollama endpoint in the admin."
WORKSPACE_ANSWER = "The workspace tool answered"
WEATHER_RESULT = "18 degrees and sunny"
# The most /v1/models calls the throttle test makes before it gives up on a 429.
THROTTLE_ATTEMPTS = 600
TIMEOUT = 30.0

WEATHER_FUNCTION: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": WEATHER_TOOL,
        "description": "The current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}

# Keys for alice (one for most tests, one to exhaust the throttle) and bob; the fake upstream's
# endpoint and a profile on it (with the built-in ``workspace`` tool beside any client tools).
OPENAI_SETUP_CODE = """
from django.contrib.auth import get_user_model
from agents.models import AgentProfile, ApiKey, ProviderEndpoint, Tool
users = get_user_model().objects
keys = {
    name: ApiKey.objects.issue(user=users.get(username=user), name=f"openai e2e {name}")[1]
    for name, user in [("alice", "alice"), ("throttled", "alice"), ("bob", "bob")]
}
endpoint = ProviderEndpoint(
    name="fake-upstream", kind="openai", base_url=ARGS["url"], models=[ARGS["model"]],
    max_retries=0, connect_timeout=5, read_timeout=30,
)
endpoint.full_clean()
endpoint.save()
profile = AgentProfile(
    slug=ARGS["slug"], name="Upstream agent", system_prompt=ARGS["prompt"],
    model=f"fake-upstream/{ARGS['model']}", limit=4, timeout=60,
)
profile.full_clean()
profile.save()
profile.tools.set(Tool.objects.filter(name="workspace"))
print(json.dumps(keys))
"""

# The conversation holding a user message that contains ``ARGS["marker"]``, once its runs have
# settled (bounded by ``ARGS["timeout"]``): what the operator sees of it.
RECORD_CODE = """
import time
from conversations.models import Message, Run
deadline = time.monotonic() + ARGS["timeout"]
while True:
    first = (
        Message.objects.filter(role="user", content__contains=ARGS["marker"])
        .order_by("created").first()
    )
    runs = [] if first is None else list(
        Run.objects.filter(conversation_id=first.conversation_id).order_by("created")
    )
    settled = runs and all(run.status not in ("queued", "running") for run in runs)
    if settled or time.monotonic() > deadline:
        break
    time.sleep(0.1)
if first is None:
    print(json.dumps(None))
else:
    conversation = first.conversation
    holding = Message.objects.filter(role="user", content__contains=ARGS["marker"])
    print(json.dumps({
        "id": str(conversation.id),
        "origin": conversation.origin,
        "owner": conversation.owner.username,
        "conversations": sorted({str(m.conversation_id) for m in holding}),
        "runs": [
            {"status": run.status, "usage_total": run.usage_total, "content": run.content}
            for run in runs
        ],
        "messages": [
            {"role": m.role, "content": m.content, "calls": m.calls}
            for m in conversation.messages.order_by("position")
        ],
    }))
"""


def shell_json(server: Server, code: str, **args: Any) -> Any:
    """Run ``code`` in ``manage.py shell`` with ``ARGS`` set to ``args``; its last line, parsed."""
    prelude = f"import json\nARGS = json.loads({json.dumps(json.dumps(args))})\n"
    return json.loads(server.shell(prelude + code).strip().splitlines()[-1])


def marker() -> str:
    """A word no other test sends (and no demo tool trigger: no file, workspace or tool)."""
    return f"probe{uuid.uuid4().hex[:12]}"


def recorded(server: Server, text: str) -> dict[str, Any]:
    """What the database holds of the conversation whose user message contains ``text``."""
    record = shell_json(server, RECORD_CODE, marker=text, timeout=TIMEOUT)
    assert record is not None, f"no conversation holds a user message containing {text!r}"
    return record


def error_body(error: openai.APIStatusError) -> dict[str, Any]:
    """The error object of OpenAI's shape, ``{"error": {message, type, param, code}}``."""
    body = error.response.json()
    assert set(body) == {"error"}, body
    inner = body["error"]
    assert {"message", "type", "param", "code"} <= set(inner), inner
    assert isinstance(inner["message"], str) and inner["message"], inner
    return inner


def joined_content(chunks: list[ChatCompletionChunk]) -> str:
    """The answer's text: every content delta, in order."""
    return "".join(choice.delta.content or "" for chunk in chunks for choice in chunk.choices)


def finish_reasons(chunks: list[ChatCompletionChunk]) -> list[str]:
    """Every ``finish_reason`` the stream set, in order."""
    return [
        choice.finish_reason for chunk in chunks for choice in chunk.choices if choice.finish_reason
    ]


def sdk(server: Server, key: str) -> openai.OpenAI:
    """The official client on the served ``/v1``, without retries (a test sees each answer)."""
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0, timeout=TIMEOUT)
