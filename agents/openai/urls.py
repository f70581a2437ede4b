"""``/v1``: the OpenAI-compatible routes."""

from django.urls import path

from . import response_views, views

app_name = "openai"

urlpatterns = [
    path("models", views.model_list, name="models"),
    path("models/<str:model>", views.model_detail, name="model"),
    path("chat/completions", views.chat_completions, name="chat-completions"),
    path("responses", response_views.create_response, name="responses"),
    path("responses/<str:response_id>", response_views.response_detail, name="response"),
]
