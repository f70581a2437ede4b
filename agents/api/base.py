"""What every API view shares: errors rendered as problem JSON, the query parameters its
operation documents and no others, the run service, the user's id."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, cast

from django.conf import settings
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from rest_framework import exceptions
from rest_framework.metadata import SimpleMetadata
from rest_framework.renderers import BaseRenderer, JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from orkestrel.protocol import encode_text

from ..runs import RunService, run_service
from .dispatch import Deferred
from .errors import PayloadTooLarge, ProblemRenderer
from .schema import ApiSchema, documented_query_parameters

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


class OptionsMetadata(SimpleMetadata):
    """``OPTIONS``: DRF's description of the view, with the fields of its writes only where
    the view declares a serializer (a view that builds its own has none to describe)."""

    def determine_actions(self, request: Request, view: APIView) -> dict[str, Any]:
        if getattr(view, "serializer_class", None) is None:
            return {}
        return super().determine_actions(request, view)


class JsonErrors(APIView):
    """Errors answer problem JSON, even to a request that asked for an event stream (or for a
    type no operation gives: a ``406`` too); a query parameter the operation does not document,
    or a bad page cursor, is a ``400``; the schema adds the answers every operation can give
    (``ApiSchema``).

    A handler may answer ``dispatch.Deferred`` (on a route that runs on the database thread).
    """

    service: RunService = run_service
    schema = ApiSchema()
    # The stubs type it as an instance; DRF instantiates the class it is given.
    metadata_class = OptionsMetadata  # type: ignore[assignment]

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
        self.check_query(request)

    def check_query(self, request: Request) -> None:
        """Refuse (``400``) query parameters the operation's schema does not name: a filter or a
        ``page_size`` the API does not know would otherwise be ignored without a word."""
        method = "GET" if request.method == "HEAD" else (request.method or "GET")
        known = documented_query_parameters(self, method)
        if known is None:
            return  # not an operation of the schema (an OPTIONS request)
        unknown = sorted(set(request.query_params) - known)
        if unknown:
            takes = ", ".join(f"`{name}`" for name in sorted(known)) or "none"
            message = f"Not a query parameter of this operation (it takes: {takes})."
            raise exceptions.ValidationError({name: [message] for name in unknown})

    def paginate_queryset(self, queryset: QuerySet[Any] | Sequence[Any]) -> list[Any] | None:
        """A page of ``queryset``; a cursor the API did not give out is a ``400``, not the
        ``404`` DRF's pagination raises."""
        try:
            return cast("list[Any] | None", cast(Any, super()).paginate_queryset(queryset))
        except exceptions.NotFound as exc:
            raise exceptions.ValidationError({"cursor": [str(exc.detail)]}) from None

    def handle_exception(self, exc: Exception) -> Response:
        return self.rendered_with(super().handle_exception(exc), ProblemRenderer())

    def as_json(self, response: Response) -> Response:
        """``response`` rendered as JSON, whatever the request's ``Accept`` negotiated."""
        return self.rendered_with(response, JSONRenderer())

    def rendered_with(self, response: Response, renderer: BaseRenderer) -> Response:
        """``response`` rendered by ``renderer``, whatever the request's ``Accept`` negotiated."""
        # ``finalize_response`` copies the request's negotiated renderer onto the response.
        self.request.accepted_renderer = renderer
        self.request.accepted_media_type = renderer.media_type
        response.accepted_renderer = renderer
        response.accepted_media_type = renderer.media_type
        return response
