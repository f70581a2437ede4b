"""Examples for the REST API's schema, in one home: each operation's request, answers and errors.

The views' ``extend_schema`` take them from here: ``body(serializer, ...)`` is a request body
with its examples, ``answer(serializer, ...)`` a success with its examples, and ``refusals(...)``
the error answers an operation gives, each in the API's one shape (``errors.ErrorSerializer``,
as ``application/problem+json``). ``schema.ApiSchema`` adds what every operation can answer
(``COMMON``: 400 for a query parameter it does not take, 401, 406 and 429, and 413 and 415
with a body). Values are what the API answers (ids, times and texts made up); the event
streams are built from the protocol's own frames. ``tests/web/api/test_schema_examples.py``
checks every example against its schema, and that no operation lacks examples.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from drf_spectacular.utils import OpenApiExample, OpenApiRequest, OpenApiResponse

from orkestrel.protocol import (
    FinishFrame,
    MessagePayload,
    PendingPayload,
    SectionPayload,
    ServerFrame,
    StartedFrame,
    ThinkFrame,
    TokenFrame,
    UsageFrame,
    UsagePayload,
    encode,
)

from .errors import PROBLEM, ErrorSerializer, problem
from .sse import format_event

__all__ = [
    "BAD_CURSOR",
    "COMMON",
    "JSON",
    "PROBLEM",
    "Refusal",
    "answer",
    "body",
    "example",
    "refusals",
]

JSON = "application/json"

# -- building blocks -----------------------------------------------------------------------------


def example(name: str, value: Any, description: str = "") -> OpenApiExample:
    """One example; its place (request, status, media type) is where ``body``/``answer`` put it."""
    return OpenApiExample(name, value=value, description=description)


def body(serializer: Any, *examples: OpenApiExample) -> OpenApiRequest:
    """A request body with its examples."""
    return OpenApiRequest(serializer, examples=list(examples))


def answer(serializer: Any, *examples: OpenApiExample, description: str = "") -> OpenApiResponse:
    """A success answer with its examples (a list view's are paginated by drf-spectacular)."""
    return OpenApiResponse(serializer, description=description, examples=list(examples))


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """An error answer: its status, the example's name and the body, in the one shape."""

    status: int
    name: str
    detail: str
    code: str
    errors: Mapping[str, Any] | None = None

    def value(self) -> dict[str, Any]:
        errors = None if self.errors is None else dict(self.errors)
        return problem(self.status, self.detail, self.code, errors)


# What each status means wherever it is answered (an operation's refusals add the specifics).
MEANING = {
    400: "Invalid input: `errors` maps each field to its messages. Nothing was changed.",
    401: "No valid API key (or session): a missing, unknown, revoked or expired key alike.",
    403: "Signed in, but not allowed to do this (a session write without its CSRF token too).",
    404: "No such object of the user's (another user's is absent too).",
    406: "The representation asked for (`Accept`) cannot be given (answered as problem JSON).",
    409: "The object's state does not allow it now.",
    413: "The request body is larger than `ORKESTREL_MAX_REQUEST_BYTES`.",
    415: "The body's content type is not one this operation takes.",
    429: "Too many requests (`API_THROTTLE_RATE`, per key) or runs; `Retry-After` says when.",
    502: "The agent could not be started (its profile's configuration).",
}


def refusals(*given: Refusal) -> dict[Any, OpenApiResponse]:
    """Error answers, by status, as problem JSON in the API's one shape, with their examples."""
    by_status: dict[int, list[Refusal]] = defaultdict(list)
    for refusal in given:
        by_status[refusal.status].append(refusal)
    return {
        (status, PROBLEM): OpenApiResponse(
            ErrorSerializer,
            description=MEANING[status],
            examples=[example(refusal.name, refusal.value()) for refusal in group],
        )
        for status, group in by_status.items()
    }


def invalid(title: str, /, **errors: list[Any] | dict[str, Any]) -> Refusal:
    """A 400 with field errors (``errors``: field → messages)."""
    return Refusal(status=400, name=title, detail="Invalid input.", code="invalid", errors=errors)


def not_found(detail: str, name: str = "Not found") -> Refusal:
    return Refusal(status=404, name=name, detail=detail, code="not_found")


# -- what every operation can answer (``schema.ApiSchema`` adds these) ---------------------------

UNKNOWN_PARAMETER = invalid(
    "A query parameter the operation does not take",
    page_size=["Not a query parameter of this operation (it takes: `cursor`)."],
)
BAD_CURSOR = invalid("A cursor the API did not give out", cursor=["Invalid cursor"])

COMMON: dict[int, tuple[Refusal, ...]] = {
    400: (UNKNOWN_PARAMETER,),
    401: (
        Refusal(
            status=401,
            name="No key",
            detail="Authentication credentials were not provided.",
            code="not_authenticated",
        ),
        Refusal(
            status=401,
            name="A refused key",
            detail="Invalid API key.",
            code="invalid_api_key",
        ),
    ),
    403: (
        Refusal(
            status=403,
            name="Outside the key's scopes",
            detail="This API key lacks the 'run' scope.",
            code="scope",
        ),
    ),
    406: (
        Refusal(
            status=406,
            name="Not a type this operation answers",
            detail="Could not satisfy the request Accept header.",
            code="not_acceptable",
        ),
    ),
    429: (
        Refusal(
            status=429,
            name="Over the rate",
            detail="Request was throttled. Expected available in 42 seconds.",
            code="throttled",
        ),
    ),
    413: (
        Refusal(
            status=413,
            name="Too large",
            detail="The request body is larger than 67108864 bytes.",
            code="too_large",
        ),
    ),
    415: (
        Refusal(
            status=415,
            name="Not a type this operation takes",
            detail='Unsupported media type "text/plain" in request.',
            code="unsupported_media_type",
        ),
    ),
}

# -- shared values ---------------------------------------------------------------------------------

CONVERSATION_ID = "3f1c2b9e-8d4a-4c1e-9a7b-2e5d6f708192"
FORK_ID = "9a4e6c2d-1b3f-4e5a-8c7d-0f1e2d3c4b5a"
USER_MESSAGE_ID = "8c0a1d52-4b3e-4f6a-9d21-7e6b5a4c3f10"
ANSWER_ID = "b7e3f9a1-2c4d-4e6f-8a0b-1c2d3e4f5a6b"
SECTION_ID = "5d2f8e7a-6b1c-4a3d-9e0f-a1b2c3d4e5f6"
RUN_ID = 42
JOB_ID = "6e1d4c3b-2a5f-4b7e-9c8d-7f6e5d4c3b2a"
ATTACHMENT_ID = "1f2e3d4c-5b6a-4978-8a9b-0c1d2e3f4a5b"
CREATED = "2026-05-02T09:14:03.512Z"
LATER = "2026-05-02T09:14:09.871Z"

QUESTION = "What should I pack for Lisbon in May?"
REPLY = "Light layers, a rain jacket and comfortable shoes for the hills."
USAGE: UsagePayload = {
    "prompt": 412,
    "completion": 58,
    "total": 470,
    "cache_read": 256,
    "cache_write": 0,
    "reasoning": 12,
    "cost": "0.00121",
}
NO_USAGE: UsagePayload = {
    "prompt": 0,
    "completion": 0,
    "total": 0,
    "cache_read": 0,
    "cache_write": 0,
    "reasoning": 0,
    "cost": None,
}
USER_USAGE = example(
    "Your usage",
    {
        "usage": {**USAGE, "prompt": 48210, "completion": 9120, "total": 57330, "cost": "0.1842"},
        "conversations": 12,
    },
)
CONTEXT = {"used": 470, "window": 128000, "approximate": False}

USER_MESSAGE: MessagePayload = {
    "id": USER_MESSAGE_ID,
    "role": "user",
    "content": QUESTION,
    "html": f"<p>{QUESTION}</p>\n",
    "calls": None,
    "tool_call_id": None,
    "images_count": 0,
    "thinking": "",
    "thinking_ms": None,
    "documents": [],
}
ANSWER: MessagePayload = {
    "id": ANSWER_ID,
    "role": "assistant",
    "content": REPLY,
    "html": f"<p>{REPLY}</p>\n",
    "calls": None,
    "tool_call_id": None,
    "images_count": 0,
    "thinking": "Dates known; suggest a few sights per day.",
    "thinking_ms": 1840,
    "documents": [],
}
EARLIER: MessagePayload = {
    "id": "0e9d8c7b-6a5f-4e3d-8c2b-1a0f9e8d7c6b",
    "role": "user",
    "content": "We fly to Lisbon on 14 May, back on the 20th.",
    "html": "<p>We fly to Lisbon on 14 May, back on the 20th.</p>\n",
    "calls": None,
    "tool_call_id": None,
    "images_count": 0,
    "thinking": "",
    "thinking_ms": None,
    "documents": [],
}
SECTION: SectionPayload = {
    "id": SECTION_ID,
    "summary": "The user flies to Lisbon on 14 May and back on the 20th.",
    "html": "<p>The user flies to Lisbon on 14 May and back on the 20th.</p>\n",
    "count": 6,
    "messages": [],
}
PENDING: PendingPayload = {
    "id": 7,
    "content": "And for a day in Sintra?",
    "images_count": 0,
    "nonce": "",
}


def _conversation(**changes: Any) -> dict[str, Any]:
    return {
        "id": CONVERSATION_ID,
        "title": "Trip to Lisbon",
        "profile": "demo",
        "origin": "api",
        "model": "",
        "thinking": "",
        "read_only": False,
        "pinned": False,
        "archived": False,
        "skills": [],
        "forked_from": None,
        "preview": None,
        "created": CREATED,
        "updated": LATER,
        "usage": USAGE,
        "context": CONTEXT,
        **changes,
    }


def _run(**changes: Any) -> dict[str, Any]:
    return {
        "id": RUN_ID,
        "conversation": CONVERSATION_ID,
        "status": "done",
        "stop_reason": "done",
        "error": "",
        "content": REPLY,
        "thinking": "",
        "model": "openai/gpt-4o-mini",
        "response_model": "gpt-4o-mini-2024-07-18",
        "usage": USAGE,
        "created": CREATED,
        "started": CREATED,
        "finished": LATER,
        **changes,
    }


def _events(*frames: ServerFrame) -> str:
    return "".join(format_event(encode(frame)) for frame in frames)


# -- profiles -------------------------------------------------------------------------------------

PROFILE = example(
    "A profile",
    {
        "slug": "demo",
        "name": "Demo (offline)",
        "description": "An offline scripted model: no model server needed.",
        "model": "demo/echo",
        "limit": 10,
        "timeout": 300.0,
        "token_budget": None,
        "context_window": 8000,
        "thinking": "",
        "read_only": False,
        "is_default": True,
    },
)

# -- API keys -----------------------------------------------------------------------------------

KEY_VALUE = {
    "id": 3,
    "name": "ci",
    "prefix": "rnk82lcd",
    "created": CREATED,
    "last_used": LATER,
    "expires": "2030-01-01T00:00:00Z",
    "revoked": None,
    "scopes": ["read", "run"],
    "profiles": ["demo"],
}
KEY = example("A key", KEY_VALUE)
NEW_KEY = example(
    "A key for CI",
    {
        "name": "ci",
        "expires": "2030-01-01T00:00:00Z",
        "scopes": ["read", "run"],
        "profiles": ["demo"],
    },
)
ISSUED_KEY = example(
    "The new key, shown this once",
    {**KEY_VALUE, "last_used": None, "key": "ork_rnk82lcd_VutAgPdg_ZTA0G2yD8hyssRe_S2wydOHnsbm"},
)
KEY_INVALID = invalid("A blank name", name=["This field may not be blank."])
NO_KEY = not_found("No ApiKey matches the given query.")

# -- conversations --------------------------------------------------------------------------------

CONVERSATION = example("A conversation", _conversation())
LISTED_CONVERSATION = example(
    "A conversation",
    _conversation(context=None, preview="Plan three days in Lisbon for two, in May"),
    description="`context` is `null` in lists.",
)
NEW_CONVERSATION = example("A titled conversation", {"title": "Trip to Lisbon", "profile": "demo"})
CREATED_CONVERSATION = example(
    "A new conversation",
    _conversation(usage=NO_USAGE, context={"used": 0, "window": 128000, "approximate": True}),
)
CONVERSATION_INVALID = invalid(
    "A long title, an unknown profile",
    title=["Ensure this field has no more than 200 characters."],
    profile=["Object with slug=nope does not exist."],
)
RENAME = example("Rename", {"title": "Lisbon, in May"})
CHOOSE_MODEL = example(
    "Choose the model and thinking level",
    {"model": "demo/echo", "thinking": "high", "read_only": True},
)
RENAMED = example("Renamed", _conversation(title="Lisbon, in May"))
PIN = example("Pin it to the top of the list", {"pinned": True})
ARCHIVE = example("Archive it (out of the list, still searchable)", {"archived": True})
FOUND = example(
    "A conversation found by its message",
    _conversation(
        context=None,
        preview="Plan three days in Lisbon for two, in May",
        snippet="…we could take the <mark>tram</mark> 28 up to the castle and walk down…",
    ),
    description="`snippet` is HTML: escaped text, each match in `<mark>`.",
)
LIST_FILTER_INVALID = invalid("Not a boolean", archived=["Use true or false."])
UPDATE_INVALID = invalid(
    "A model no profile offers", model=["Choose one of the models your profiles offer."]
)
UPDATE_EMPTY = invalid(
    "Nothing to change",
    non_field_errors=["Send a title, a model, a thinking level, read_only, pinned or archived."],
)
NO_CONVERSATION = not_found("No such conversation.")
BUSY = Refusal(
    status=409,
    name="A reply is running",
    detail="a reply is still running in this conversation",
    code="busy",
)

FORK = example("Through a message", {"message": ANSWER_ID})
FORKED = example(
    "The fork",
    _conversation(
        id=FORK_ID,
        forked_from={"conversation": CONVERSATION_ID, "message": ANSWER_ID},
        usage=NO_USAGE,
    ),
)
FORK_INVALID = invalid("No message", message=["This field is required."])
NO_FORK_MESSAGE = not_found("No such message in this conversation.", "No such message")
FORK_BUSY = Refusal(
    status=409,
    name="A reply is running",
    detail="an answer is still running in this conversation",
    code="busy",
)

# -- messages and runs ------------------------------------------------------------------------

TRANSCRIPT = example(
    "Sections and the live tail",
    {
        "sections": [SECTION],
        "messages": [USER_MESSAGE, ANSWER],
        "earlier": 0,
        "models": {ANSWER_ID: {"model": "openai/gpt-4o-mini", "response_model": "gpt-4o-mini"}},
    },
)
EARLIER_PAGE = example(
    "A page back (`before`)", {"sections": [], "messages": [EARLIER], "earlier": 3}
)
NO_MESSAGE = not_found("no such message", "No such message (`before`)")

MESSAGE = example("A question", {"content": QUESTION})
MESSAGE_WITH_IMAGE = example(
    "With an uploaded image",
    {"content": "What is in this photo?", "attachments": [ATTACHMENT_ID]},
    description="`attachments` are ids from `POST …/attachments/`; `images` takes base64.",
)
COMPACT_COMMAND = example("Fold now", {"content": "/compact the packing list"})
RUN_STARTED = example(
    "The run, started",
    {
        **_run(status="running", stop_reason="", content="", usage=NO_USAGE, finished=None),
        "message": USER_MESSAGE,
    },
    description="`message`: the user message stored (its id for an edit or a regenerate).",
)
QUEUED = example(
    "Queued: a run is going",
    {"pending": [PENDING], "run": RUN_ID},
    description="`run` takes it at its next model request, or the run after it does.",
)
RUN_SETTLED = example("The run, settled (`wait=true`)", {**_run(), "message": USER_MESSAGE})
QUEUED_SETTLED = example(
    "Queued, then answered (`wait=true`)",
    {
        **_run(id=RUN_ID + 1),
        "message": {**USER_MESSAGE, "content": PENDING["content"], "html": ""},
    },
    description="The run that took it, with the user message it went in (merged with the "
    "others that waited).",
)
COMPACTED = example("`/compact`: the section folded", {"compacted": SECTION})
SKILLS = example(
    "`/skill`: skills now active", {"skills": {"added": ["packing"], "active": ["packing"]}}
)
DUPLICATE = example(
    "A repeated submit, ignored",
    {
        "duplicate": True,
        "message": USER_MESSAGE,
        "run": _run(status="running", stop_reason="", content="Light layers,", finished=None),
    },
    description="The same content again within 2 s: answered with the first message's run.",
)
MESSAGE_INVALID = invalid(
    "Too long", content=["Ensure this field has no more than 100000 characters."]
)
IMAGE_INVALID = invalid("Not an image", images=["images[0] is not a PNG, JPEG, GIF or WebP image"])
TOO_MANY_RUNS = Refusal(
    status=429,
    name="Too many replies running",
    detail="you have 20 replies running; wait for one to finish (at most 20 at once)",
    code="too_many_runs",
)
RUN_FAILED = Refusal(
    status=502,
    name="The agent could not start",
    detail="The agent could not be started.",
    code="run_failed",
)

RUN_EVENTS = example(
    "A short run",
    _events(
        StartedFrame(run=RUN_ID, seq=1, message=USER_MESSAGE, nonce=None, title="Trip to Lisbon"),
        ThinkFrame(run=RUN_ID, seq=2, content="Mild, some rain: layers."),
        TokenFrame(run=RUN_ID, seq=3, content="Light layers, a rain jacket "),
        TokenFrame(run=RUN_ID, seq=4, content="and comfortable shoes for the hills."),
        UsageFrame(
            run=RUN_ID,
            seq=5,
            usage=USAGE,
            total=USAGE,
            context={"used": 470, "window": 128000, "approximate": False},
        ),
        FinishFrame(
            run=RUN_ID,
            seq=6,
            result={
                "content": REPLY,
                "thinking": "Mild, some rain: layers.",
                "usage": USAGE,
                "partial": False,
                "stop": "done",
            },
            context={"used": 470, "window": 128000, "approximate": False},
        ),
    ),
    description="`id`: the frame's `seq`; `event`: its `type`; `data`: the frame.",
)
RESUMED_EVENTS = example(
    "Resumed with `Last-Event-ID: 4`",
    _events(
        UsageFrame(
            run=RUN_ID,
            seq=5,
            usage=USAGE,
            total=USAGE,
            context={"used": 470, "window": 128000, "approximate": False},
        ),
        FinishFrame(
            run=RUN_ID,
            seq=6,
            result={
                "content": REPLY,
                "thinking": "Mild, some rain: layers.",
                "usage": USAGE,
                "partial": False,
                "stop": "done",
            },
            context={"used": 470, "window": 128000, "approximate": False},
        ),
    ),
)

PENDING_LIST = example("One waiting", {"pending": [PENDING]})
TAKEN = example("Taken back", {"taken": [PENDING["content"]]})

ATTACH = example("An image", {"file": "(the image's bytes)"})
ATTACHED = example("Attached", {"id": ATTACHMENT_ID, "mime": "image/png", "size": 48213})
# Daphne (Twisted) parses a multipart POST itself and answers a malformed one with a bare 400
# that never reaches the API: the schema cannot promise JSON for this status here.
ATTACH_REFUSED = OpenApiResponse(
    description=(
        "Not an image or document, too large, a PDF of too many pages, unreadable, or no "
        "`file`: the API's error as JSON (`errors`: `file`: the reason). A malformed multipart "
        "body is refused by the HTTP server before the API, with no body."
    )
)

SECTIONS = example("One section", {"sections": [SECTION]})
ORIGINALS = example("Its originals", {"id": SECTION_ID, "messages": [EARLIER]})
NO_SECTION = not_found("no such section", "No such section")
FOCUS = example("With a focus", {"focus": "the packing list"})
FOLDED = example("Folded", {"section": SECTION})
FOCUS_INVALID = invalid("Too long", focus=["Ensure this field has no more than 2000 characters."])
NOTHING_TO_FOLD = Refusal(
    status=409, name="Nothing to fold", detail="Nothing to fold yet.", code="nothing_to_compact"
)

EXPORT = example(
    "A conversation",
    '{"type": "conversation", "title": "Trip to Lisbon", "profile": "demo", "summary": null}\n'
    f'{{"type": "message", "section": null, "id": "{USER_MESSAGE_ID}", "role": "user", '
    f'"content": "{QUESTION}"}}\n'
    f'{{"type": "message", "section": null, "id": "{ANSWER_ID}", "role": "assistant", '
    f'"content": "{REPLY}"}}\n',
)
EXPORT_ARRAY = example(
    "A conversation, as one JSON array (?format=json)",
    [
        {"type": "conversation", "title": "Trip to Lisbon", "profile": "demo", "summary": None},
        {
            "type": "message",
            "section": None,
            "id": USER_MESSAGE_ID,
            "role": "user",
            "content": QUESTION,
        },
        {
            "type": "message",
            "section": None,
            "id": ANSWER_ID,
            "role": "assistant",
            "content": REPLY,
        },
    ],
)
IMPORTED = example("The new conversation", _conversation(id=FORK_ID, origin="chat"))
IMPORT_INVALID = invalid("Not JSON Lines", records=["line 1: not valid JSON"])

SEARCH_INVALID = invalid("No text", q=["Enter text to search for."])

RUN = example("A settled run", _run())
LISTED_RUN = example("A settled run", _run())
RUN_FILTER_INVALID = invalid(
    "Not a status",
    status=['"paused" is not a valid choice.'],
    conversation=["Must be a valid UUID."],
)
NO_RUN = not_found("No such run.")
CANCELLED = example(
    "Stopping", _run(status="running", stop_reason="", content="Light layers,", finished=None)
)
NOT_RUNNING = Refusal(
    status=409, name="Not running", detail="The run is not running.", code="not_running"
)
RETRIED = example(
    "A new run",
    _run(id=RUN_ID + 1, status="running", stop_reason="", content="", finished=None),
)
NOT_RETRYABLE = Refusal(
    status=409,
    name="Not retryable",
    detail="only a failed, stopped or interrupted run can be retried",
    code="not_retryable",
)
AFTER_INVALID = invalid("Not an event id", after=["Must be an event id (an integer)."])


def _conversation_events(*frames: ServerFrame) -> str:
    return "".join(
        format_event(encode(frame), lambda f: f"{f['run']}.{f['seq']}") for frame in frames
    )


_FINISHED = {
    "content": REPLY,
    "thinking": "",
    "usage": USAGE,
    "partial": False,
    "stop": "done",
}
CONVERSATION_EVENTS = example(
    "Two runs, one after the other",
    _conversation_events(
        TokenFrame(run=RUN_ID, seq=3, content="Light layers, a rain jacket."),
        FinishFrame(run=RUN_ID, seq=4, result=_FINISHED, context=CONTEXT),  # type: ignore[arg-type]
        StartedFrame(run=RUN_ID + 1, seq=1, message=EARLIER, nonce=None, title="Trip to Lisbon"),
        TokenFrame(run=RUN_ID + 1, seq=2, content="Noted: 14 to 20 May."),
        FinishFrame(run=RUN_ID + 1, seq=3, result=_FINISHED, context=CONTEXT),  # type: ignore[arg-type]
    ),
    description="`id`: opaque (send it back as `Last-Event-ID`); `event`: the frame's `type`; "
    "`data`: the frame, whose `run` says which run it is of.",
)
CONVERSATION_EVENT_INVALID = invalid(
    "Not an event id of this stream",
    after=["Must be an event id this stream gave (of this conversation's runs)."],
)

# -- alternatives: regenerated answers, edited messages ------------------------------------------

FIRST_ANSWER_ID = "c4d5e6f7-0a1b-4c2d-8e3f-9a0b1c2d3e4f"
REGENERATED = example(
    "A new answer, running",
    _run(id=RUN_ID + 1, status="running", stop_reason="", content="", finished=None),
)
EDITED_RUN = example(
    "The edited message's answer, running",
    _run(id=RUN_ID + 1, status="running", stop_reason="", content="", finished=None),
)
NO_BRANCH_MESSAGE = not_found(
    f"no message {ANSWER_ID!r} in the live part of this conversation", "No such live message"
)
NOT_BRANCHABLE = Refusal(
    status=409,
    name="No turn to answer again",
    detail="no user message of this turn is in the live conversation",
    code="not_branchable",
)
NOT_EDITABLE = Refusal(
    status=409,
    name="Not a user message",
    detail="only a user message can be edited",
    code="not_branchable",
)
REWORDED = example("New wording", {"content": "What should I pack for Porto in May?"})
REWORDED_INVALID = invalid("No text", content=["This field may not be blank."])
BRANCHES_VALUE = [
    {"point": USER_MESSAGE_ID, "message": ANSWER_ID, "index": 2, "count": 2, "error": ""}
]
BRANCHES = example("One answer regenerated", {"branches": BRANCHES_VALUE})
CHOOSE_BRANCH = example("The first answer", {"point": USER_MESSAGE_ID, "index": 1})
BRANCH_CHOSEN = example(
    "The first answer, chosen",
    {"branches": [{**BRANCHES_VALUE[0], "index": 1, "message": FIRST_ANSWER_ID}]},
)
BRANCH_CHOICE_INVALID = invalid(
    "No alternative 0", index=["Ensure this value is greater than or equal to 1."]
)
NO_BRANCH = not_found("no alternative 3 at that point", "No such alternative")

# -- workspace files ------------------------------------------------------------------------------

PACKING_LIST = "# To do\n\n- book the flight\n- pack\n"
FILE_VALUE = {
    "path": "notes/todo.md",
    "kind": "text",
    "language": "markdown",
    "mime": "",
    "size": 34,
    "lines": 5,
    "state": "modified",
}
FILES = example(
    "Two files",
    {
        "files": [
            FILE_VALUE,
            {
                "path": "photos/dot.png",
                "kind": "image",
                "language": "",
                "mime": "image/png",
                "size": 48213,
                "lines": 0,
                "state": "created",
            },
        ]
    },
)
FILE_TEXT = example("A text file", {**FILE_VALUE, "text": PACKING_LIST})
FILE_SPAN = example(
    "Lines 3 to 3",
    {
        **FILE_VALUE,
        "text": "- book the flight",
        "range": {"start": {"line": 3, "column": 1}, "end": {"line": 3, "column": 18}},
    },
)
RAW_TEXT = example("`raw=true` of a text file", PACKING_LIST)
RANGE_INVALID = invalid(
    "A line before the first", start_line=["Ensure this value is greater than or equal to 1."]
)
NO_FILE = not_found("No such file.", "No such file")
NOT_AN_IMAGE = Refusal(
    status=406,
    name="Not an image",
    detail="'notes/todo.md' is a text file; ask for JSON or `?raw=true`.",
    code="not_acceptable",
)
PUT_TEXT = example("Text", {"text": PACKING_LIST})
PUT_UPLOAD = example("An upload", {"file": "(the file's bytes)"})
FILE_CREATED = example("Created", {**FILE_VALUE, "state": "created"})
FILE_REPLACED = example("Replaced", FILE_VALUE)
TEXT_INVALID = invalid("NUL in the text", text=["Text cannot contain NUL characters."])
EDIT_WRITE = example(
    "Write a range",
    {
        "op": "write",
        "range": {"start": {"line": 1, "column": 3}, "end": {"line": 1, "column": 8}},
        "text": "Before the trip",
    },
)
EDIT_APPEND = example("Append", {"op": "append", "text": "- water the plants\n"})
EDIT_REPLACE = example(
    "Replace",
    {"op": "replace", "search": "pack", "replace": "pack light", "regex": False, "limit": 1},
)
EDIT_MOVE = example("Move", {"op": "move", "to": "notes/trip.md"})
EDITED = example("Edited", {**FILE_VALUE, "size": 40})
REPLACED = example("Replaced (`replace`)", {**FILE_VALUE, "size": 40, "replaced": 1})
EDIT_INVALID = invalid(
    "An invalid regex",
    search=["invalid pattern '(': missing ), unterminated subpattern at position 0"],
)
EXISTS = Refusal(
    status=409,
    name="The path is taken",
    detail="A file already exists at 'notes/trip.md'.",
    code="exists",
)

# -- jobs -----------------------------------------------------------------------------------------

JOB_OPTIONS = {"limit": 4, "timeout": 60.0, "budget": None, "allow_partial": False, "retries": 1}
JOB_QUEUED_VALUE = {
    "id": JOB_ID,
    "profile": "demo",
    "status": "queued",
    "attempts": 0,
    "options": JOB_OPTIONS,
    "cancel_requested": False,
    "created": CREATED,
    "started": None,
    "finished": None,
    "result": None,
    "error": None,
    "parent": None,
    "depth": 0,
    "progress": {"turns": 0, "tools": 0, "last_tool": "", "tokens": 0, "text": ""},
}
NEW_JOB = example(
    "Summarize",
    {
        "profile": "demo",
        "messages": [{"role": "user", "content": "Summarize: the flight is at 9."}],
        "system": "Answer in one sentence.",
        "limit": 4,
        "timeout": 60,
        "retries": 1,
    },
)
JOB_QUEUED = example("Queued", JOB_QUEUED_VALUE)
JOB_DONE = example(
    "Done",
    {
        **JOB_QUEUED_VALUE,
        "status": "done",
        "attempts": 1,
        "started": CREATED,
        "finished": LATER,
        "progress": {
            "turns": 1,
            "tools": 0,
            "last_tool": "",
            "tokens": 31,
            "text": "The flight leaves at 9.",
        },
        "result": {
            "content": "The flight leaves at 9.",
            "thinking": None,
            "usage": {**NO_USAGE, "prompt": 23, "completion": 8, "total": 31},
            "partial": False,
            "stop": "done",
        },
    },
)
JOB_FAILED = example(
    "Failed",
    {
        **JOB_QUEUED_VALUE,
        "status": "error",
        "attempts": 2,
        "started": CREATED,
        "finished": LATER,
        "error": {"code": "provider", "message": "The model server answered 503."},
    },
)
JOB_CANCELLING = example(
    "Cancelling",
    {
        **JOB_QUEUED_VALUE,
        "status": "running",
        "attempts": 1,
        "started": CREATED,
        "cancel_requested": True,
    },
)
JOB_INVALID = invalid(
    "Unknown profile, no messages, no time",
    profile=["No enabled agent profile is named nope."],
    messages={"non_field_errors": ["This list may not be empty."]},
    timeout=["Must be a positive number of seconds."],
)
NO_JOB = not_found("No such job.")
JOB_SETTLED = Refusal(
    status=409, name="Settled", detail="The job has settled already.", code="settled"
)


# -- approvals -----------------------------------------------------------------------------------

APPROVAL_VALUE: dict[str, Any] = {
    "id": 7,
    "call_id": "call_3",
    "tool": "workspace",
    "arguments": {"operation": "remove", "path": "notes.md"},
    "parameters": {"type": "object"},
    "approver": "owner",
    "status": "pending",
    "reason": "",
    "rule": "#1 workspace → ask",
    "zone": "files",
    "run": 41,
    "conversation": CONVERSATION_ID,
    "created": "2026-12-01T16:05:00Z",
    "expires": None,
    "decided": None,
    "decided_by": None,
}
APPROVAL = example("A call waiting for you", APPROVAL_VALUE)
APPROVE = example("Approve", {"decision": "approve"})
DENY = example("Deny, with what the model reads", {"decision": "deny", "reason": "keep that file"})
APPROVE_EDITED = example(
    "Approve with edited arguments",
    {"decision": "approve", "arguments": {"operation": "remove", "path": "draft.md"}},
)
APPROVED = example(
    "Approved",
    {
        **APPROVAL_VALUE,
        "status": "approved",
        "decided": "2026-12-01T16:06:10Z",
        "decided_by": "alice",
        "continued_by": 43,
    },
    description="`continued_by`: the run that goes on (null while other calls of its run wait).",
)
NO_APPROVAL = not_found("No such approval.")
UNKNOWN_STATUS = invalid(
    "An unknown status", status=["Must be one of pending, approved, denied, expired, all."]
)
BAD_DECISION = invalid("A decision the tool refuses", arguments=["invalid arguments: ..."])
OPERATOR_DECIDES = Refusal(
    status=403,
    name="An operator decides",
    detail="an operator decides this call, in the admin",
    code="operator_decides",
)
DECIDED = Refusal(
    status=409, name="Decided already", detail="this call was approved already", code="decided"
)
