"""One error shape for the whole API: RFC 9457's problem details, with DRF's machine ``code``.

Every error answers ``application/problem+json``: ``{"type": "about:blank", "title": "<the
status's phrase>", "status": <status>, "detail": "<message>", "code": "<code>"}``; a validation
error adds ``"errors"``, DRF's field → messages mapping. ``code`` is what programs branch on
(the ``type`` stays ``about:blank``: the status and ``code`` say it all). Django's ``Http404``
and ``PermissionDenied`` raised by the services map to 404 and 403 like DRF's own; what no view
answers (an unmatched path, an uncaught error) gets the same shape from ``problem_response``.
``ErrorSerializer`` describes the shape in the schema.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpResponse
from rest_framework import exceptions, serializers, status
from rest_framework.renderers import JSONRenderer
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from orkestrel.problems import PROBLEM, problem
from orkestrel.refusals import Refusal

__all__ = [
    "PROBLEM",
    "Conflict",
    "ErrorSerializer",
    "PayloadTooLarge",
    "ProblemRenderer",
    "RunFailed",
    "TooManyRunsError",
    "exception_handler",
    "problem",
    "problem_response",
    "refused",
]


class ProblemRenderer(JSONRenderer):
    """DRF's JSON, sent as ``application/problem+json`` (an error's body)."""

    media_type = PROBLEM
    format = "problem"


class ErrorSerializer(serializers.Serializer[Any]):
    """The API's one error shape (RFC 9457 problem details, plus ``code``)."""

    type = serializers.CharField(help_text="Always `about:blank`: `status` and `code` say it.")
    title = serializers.CharField(help_text="The status's phrase: `Not Found`...")
    status = serializers.IntegerField(help_text="The HTTP status, as answered.")
    detail = serializers.CharField()
    code = serializers.CharField(help_text="What went wrong, for programs: `not_found`, `busy`...")
    # A declared field leaves ``Serializer.errors`` alone (the metaclass collects it).
    errors = serializers.DictField(  # type: ignore[assignment]
        child=serializers.JSONField(),
        required=False,
        help_text="Field → messages (nested for nested fields), on a validation error (400).",
    )


class Conflict(exceptions.APIException):
    """The resource is busy (a run is already going on the conversation)."""

    status_code = status.HTTP_409_CONFLICT
    default_detail = "A reply is still running in this conversation."
    default_code = "busy"


class TooManyRunsError(exceptions.APIException):
    """The user has as many runs going as the server allows at once."""

    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    default_detail = "Too many replies are running; wait for one to finish."
    default_code = "too_many_runs"


class RunFailed(exceptions.APIException):
    """The agent behind the conversation could not be started (its configuration)."""

    status_code = status.HTTP_502_BAD_GATEWAY
    default_detail = "The agent could not be started."
    default_code = "run_failed"


class PayloadTooLarge(exceptions.APIException):
    """The request body is over ``ORKESTREL["MAX_REQUEST_BYTES"]``."""

    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def problem_response(status: int, detail: str, code: str) -> HttpResponse:
    """An error answered outside DRF (an unmatched path, an uncaught error), in the one shape."""
    return HttpResponse(
        json.dumps(problem(status, detail, code)), status=status, content_type=PROBLEM
    )


def _codes(detail: Any) -> str:
    if isinstance(detail, exceptions.ErrorDetail):
        return str(detail.code)
    return "invalid"


# REST codes older than the refusals' own, kept for the clients that branch on them.
_REST_CODES = {"too_many_pending": "too_many_runs", "operator": "operator_decides"}


def refused(refusal: Refusal) -> exceptions.APIException:
    """The REST answer to a refusal: a ``400`` naming its request field when it has one, else
    its own status and code (the message, or its public detail when it is for operators)."""
    if refusal.field is not None:
        return exceptions.ValidationError({refusal.field: [str(refusal)]})
    error = exceptions.APIException(
        refusal.public_detail or str(refusal), _REST_CODES.get(refusal.code, refusal.code)
    )
    error.status_code = refusal.status_code
    return error


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with refusals and Django validation errors mapped and the body in one
    shape."""
    # RFC 9457's extension members a refusal adds to its body (``QuotaExceeded``: ``resets_at``).
    extensions = exc.extensions() if isinstance(exc, Refusal) and hasattr(exc, "extensions") else {}
    if isinstance(exc, Refusal):
        exc = refused(exc)
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"detail": exc.messages}
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    if isinstance(exc, exceptions.ValidationError):
        # ``errors`` is always field → messages: a bare list is the body's, as DRF names it.
        fields = data if isinstance(data, dict) else {"non_field_errors": data}
        response.data = problem(response.status_code, "Invalid input.", "invalid", fields)
    elif isinstance(data, dict) and "detail" in data:
        detail = data["detail"]
        response.data = problem(response.status_code, str(detail), _codes(detail))
    if extensions:
        response.data.update(extensions)
    return response
