"""Routes of the chat UI's pages beside the chat: settings, agent jobs."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "agents"

urlpatterns = [
    path("settings/keys/", views.api_keys, name="keys"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job"),
]
