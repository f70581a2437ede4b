"""Routes of the REST API (under ``/api/``), its OpenAPI schema and its docs page."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from . import schema  # noqa: F401 - registers the API key scheme with drf-spectacular
from .approvals import ApprovalViewSet
from .conversations import ConversationViewSet
from .profiles import ProfileViewSet
from .runs import RunViewSet
from .usage import UsageView

router = SimpleRouter()
router.register("profiles", ProfileViewSet, basename="api-profile")
router.register("conversations", ConversationViewSet, basename="api-conversation")
router.register("runs", RunViewSet, basename="api-run")
router.register("approvals", ApprovalViewSet, basename="api-approval")

urlpatterns = [
    path("keys/", include("agents.api.keys")),
    path("jobs/", include("agents.api.jobs")),
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("conversations/<uuid:conversation_id>/workspace/", include("agents.api.workspace")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    *router.urls,
]
