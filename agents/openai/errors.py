"""OpenAI's error shape, ``{"error": {"message", "type", "param", "code"}}``, with the status
codes the official SDKs map to their exception classes."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.http import HttpResponse

from orkestrel.refusals import Refusal

from ..runs.errors import (
    Busy,
    ProfileForbidden,
    StartFailed,
    ToolClash,
    TooManyRuns,
    UnknownProfile,
    UnknownToolCall,
)
from ..runtime.spec import ModelUnavailable

__all__ = [
    "OpenAIError",
    "bad_request",
    "error_body",
    "error_response",
    "model_forbidden",
    "model_not_found",
    "not_found",
    "refused",
    "server_error",
    "unknown_url",
]


@dataclass
class OpenAIError(Exception):
    """An answer other than success, raised anywhere under a view and answered as it says."""

    status: int
    message: str
    type: str = "invalid_request_error"
    param: str | None = None
    code: str | None = None
    retry_after: int | None = None

    def __str__(self) -> str:
        return self.message


def bad_request(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(400, message, param=param, code=code)


def not_found(message: str, param: str | None = None, code: str | None = None) -> OpenAIError:
    return OpenAIError(404, message, param=param, code=code)


def model_not_found(model: str) -> OpenAIError:
    return not_found(
        f"The model '{model}' does not exist or you do not have access to it.",
        "model",
        "model_not_found",
    )


def model_forbidden(model: str) -> OpenAIError:
    """A profile operators have not opened to this user (``403``, as OpenAI's SDKs expect)."""
    return OpenAIError(
        403,
        f"You do not have access to the model '{model}'.",
        type="permission_error",
        param="model",
        code="model_not_allowed",
    )


def unknown_url(method: str, path: str) -> OpenAIError:
    """No ``/v1`` route answers ``path`` (``404``, in the words OpenAI's own API uses)."""
    return not_found(f"Invalid URL ({method} {path})", code="unknown_url")


def server_error() -> OpenAIError:
    """Our own fault (``500``): the details are in the server's log, never the answer."""
    return OpenAIError(
        500, "The server had an error while answering.", type="server_error", code="server_error"
    )


def refused(refusal: Refusal, *, model: str) -> OpenAIError:
    """``/v1``'s answer to a run service's refusal of a run on ``model``, in the words (and
    statuses) OpenAI's SDKs know; a refusal it has no words for answers its own code."""
    match refusal:
        case UnknownProfile():
            return model_not_found(model)
        case ProfileForbidden():
            return model_forbidden(model)
        case ToolClash():
            names = ", ".join(refusal.names)
            message = f"Tool names clash with the agent's own tools: {names}."
            return bad_request(message, "tools", "tool_name_clash")
        case UnknownToolCall():
            message = f"No tool call found for function call output with call_id {refusal.call_id}."
            return bad_request(message, "input", "unknown_call_id")
        case Busy():
            return OpenAIError(
                409,
                "The conversation of previous_response_id is still running; wait for its response.",
                param="previous_response_id",
                code="conversation_busy",
            )
        case TooManyRuns():
            return OpenAIError(
                429, str(refusal), type="rate_limit_error", code="too_many_runs", retry_after=1
            )
        case ModelUnavailable():
            return OpenAIError(409, str(refusal), param="previous_response_id", code=refusal.code)
        case StartFailed():
            return OpenAIError(
                500,
                "The agent profile could not be started; an operator must check its configuration.",
                type="server_error",
                code="profile_unavailable",
            )
    return OpenAIError(
        refusal.status_code,
        refusal.public_detail or str(refusal),
        param=refusal.field,
        code=refusal.code,
    )


def error_body(error: OpenAIError) -> dict[str, object]:
    return {
        "error": {
            "message": error.message,
            "type": error.type,
            "param": error.param,
            "code": error.code,
        }
    }


def error_response(error: OpenAIError) -> HttpResponse:
    response = HttpResponse(
        json.dumps(error_body(error)), status=error.status, content_type="application/json"
    )
    if error.retry_after is not None:
        response["Retry-After"] = str(error.retry_after)
    return response
