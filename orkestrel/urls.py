"""URL routes."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .health import healthz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("agents.api.urls")),
    path("v1/", include("agents.openai.urls")),
    path("", include("agents.urls")),
    path("", include("conversations.file_urls")),
    path("", include("conversations.urls")),
]
