"""Routes of the chat UI's pages beside the chat: settings, agent jobs."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "agents"

urlpatterns = [
    path("settings/keys/", views.api_keys, name="keys"),
    path("settings/mcp/", views.mcp_credentials, name="mcp-credentials"),
    path("settings/mcp/oauth/callback/", views.mcp_oauth_callback, name="mcp-oauth-callback"),
    path("settings/mcp/<slug:server>/connect/", views.mcp_connect, name="mcp-connect"),
    path("settings/mcp/<slug:server>/", views.mcp_credential, name="mcp-credential"),
    path(
        "settings/mcp/<slug:server>/remove/",
        views.mcp_credential_remove,
        name="mcp-credential-remove",
    ),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job"),
]
