"""Routes of the chat UI's settings pages."""

from __future__ import annotations

from django.urls import path

from . import views

app_name = "agents"

urlpatterns = [
    path("settings/keys/", views.api_keys, name="keys"),
]
