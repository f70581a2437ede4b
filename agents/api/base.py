"""What every API view shares: errors rendered as JSON, the run service, the user's id."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from orkestrel.protocol import encode_text

from ..runs import RunService, run_service
from .dispatch import Deferred
from .errors import PayloadTooLarge
from .schema import ApiSchema

__all__ = ["JsonErrors", "deferred_json", "user_id"]


def user_id(request: Request) -> int:
    """The authenticated user's primary key (every API view requires authentication)."""
    key = request.user.pk
    assert key is not None  # ``IsAuthenticated`` let only a signed-in user through
    return int(key)


def deferred_json(body: Callable[[], Awaitable[dict[str, Any]]]) -> StreamingHttpResponse:
    """A JSON response whose body is awaited after the view returned.

    A sync view must not block on a run: under ASGI every sync view and every database hop
    shares one thread, so a view waiting there would wait for itself. The response goes out
    when ``body`` resolves, on the event loop.
    """

    async def chunks() -> AsyncIterator[str]:
        yield encode_text(await body())

    return StreamingHttpResponse(chunks(), content_type="application/json")


class JsonErrors(APIView):
    """Errors answer JSON, even to a request that asked for an event stream; the schema adds
    the answers every operation can give (``ApiSchema``).

    A handler may answer ``dispatch.Deferred`` (on a route that runs on the database thread).
    """

    service: RunService = run_service
    schema = ApiSchema()

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(response, Deferred):
            return response  # finalized once its work is done (``Deferred.resume``)
        return super().finalize_response(request, response, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        # Refused on its declared length, before a byte of it is read or parsed.
        declared = request.META.get("CONTENT_LENGTH") or "0"
        limit = settings.ORKESTREL["MAX_REQUEST_BYTES"]
        if declared.isdigit() and int(declared) > limit:
            raise PayloadTooLarge(f"The request body is larger than {limit} bytes.")
        super().initial(request, *args, **kwargs)

    def handle_exception(self, exc: Exception) -> Response:
        return self.as_json(super().handle_exception(exc))

    def as_json(self, response: Response) -> Response:
        """``response`` rendered as JSON, whatever the request's ``Accept`` negotiated."""
        renderer = JSONRenderer()
        # ``finalize_response`` copies the request's negotiated renderer onto the response.
        self.request.accepted_renderer = renderer
        self.request.accepted_media_type = renderer.media_type
        response.accepted_renderer = renderer
        response.accepted_media_type = renderer.media_type
        return response
