"""Routes of the chat UI's conversation pages."""

from django.urls import path

from . import file_views, views

app_name = "conversations"

urlpatterns = [
    path("", views.conversation_list, name="list"),
    path("c/new/", views.conversation_create, name="create"),
    path("c/<uuid:conversation_id>/", views.conversation_chat, name="chat"),
    path("c/<uuid:conversation_id>/rename/", views.conversation_rename, name="rename"),
    path("c/<uuid:conversation_id>/delete/", views.conversation_delete, name="delete"),
    path("c/<uuid:conversation_id>/messages/", views.conversation_messages, name="messages"),
    path(
        "c/<uuid:conversation_id>/attachments/",
        file_views.attachment_upload,
        name="attachments",
    ),
    path(
        "c/<uuid:conversation_id>/sections/<str:section_id>/",
        views.conversation_section,
        name="section",
    ),
]
