"""Routes of the REST API (under ``/api/``), its OpenAPI schema and its docs page."""

from __future__ import annotations

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import SimpleRouter

from . import schema  # noqa: F401 - registers the API key scheme with drf-spectacular
from .approvals import ApprovalViewSet
from .conversations import ConversationViewSet
from .profiles import ProfileViewSet
from .questions import QuestionViewSet
from .runs import RunViewSet
from .usage import UsageView

router = SimpleRouter()
router.register("profiles", ProfileViewSet, basename="api-profile")
router.register("conversations", ConversationViewSet, basename="api-conversation")
router.register("runs", RunViewSet, basename="api-run")
router.register("approvals", ApprovalViewSet, basename="api-approval")
router.register("questions", QuestionViewSet, basename="api-question")

urlpatterns = [
    path("keys/", include("agents.api.keys")),
    path("jobs/", include("agents.api.jobs")),
    path("schedules/", include("agents.api.schedules")),
    path("mcp/credentials/", include("agents.api.mcp_credentials")),
    path("usage/", UsageView.as_view(), name="api-usage"),
    path("conversations/<uuid:conversation_id>/workspace/", include("agents.api.workspace")),
    path("conversations/<uuid:conversation_id>/mcp/", include("agents.api.mcp_offerings")),
    path("conversations/<uuid:conversation_id>/tools/", include("agents.api.tools")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    *router.urls,
]
