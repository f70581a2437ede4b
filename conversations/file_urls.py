"""Routes of the chat page's files (under the conversation they belong to): the workspace
panel's, and the images a message was sent with.

Their namespace stays ``workspaces``: the panel shows the workspace app's files.
"""

from django.urls import path

from . import file_views as views

app_name = "workspaces"

urlpatterns = [
    path("c/<uuid:conversation_id>/workspace/files/", views.workspace_files, name="files"),
    path("c/<uuid:conversation_id>/workspace/file/", views.workspace_file, name="file"),
    path("c/<uuid:conversation_id>/workspace/image/", views.workspace_image, name="image"),
    path("c/<uuid:conversation_id>/workspace/upload/", views.workspace_upload, name="upload"),
    path(
        "c/<uuid:conversation_id>/messages/<str:message_id>/images/<int:index>/",
        views.message_image,
        name="message_image",
    ),
]
