"""The liveness and readiness probe."""

from __future__ import annotations

from django.db import connection
from django.db.utils import Error as DatabaseError
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from . import __version__


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Report status, version and whether the database answers; 503 when it does not."""
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        database = True
    except DatabaseError:
        database = False
    status = "ok" if database else "degraded"
    return JsonResponse(
        {"status": status, "version": __version__, "database": database},
        status=200 if database else 503,
    )
