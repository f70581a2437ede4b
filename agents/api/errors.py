"""One error shape for the whole API: DRF's, always with a machine ``code``.

Every error answers ``{"detail": "<message>", "code": "<code>"}``; a validation error adds
``"errors"``, DRF's field → messages mapping. Django's ``Http404`` and ``PermissionDenied``
raised by the services map to 404 and 403 like DRF's own. ``ErrorSerializer`` describes the
shape in the schema.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, serializers, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

__all__ = [
    "Conflict",
    "ErrorSerializer",
    "PayloadTooLarge",
    "RunFailed",
    "TooManyRunsError",
    "exception_handler",
]


class ErrorSerializer(serializers.Serializer[Any]):
    """The API's one error shape."""

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


def _codes(detail: Any) -> str:
    if isinstance(detail, exceptions.ErrorDetail):
        return str(detail.code)
    return "invalid"


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """DRF's handler, with Django validation errors mapped and the body in one shape."""
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
        response.data = {"detail": "Invalid input.", "code": "invalid", "errors": fields}
    elif isinstance(data, dict) and "detail" in data:
        response.data = {"detail": str(data["detail"]), "code": _codes(data["detail"])}
    return response
