"""Websocket routes."""

from django.urls import path, re_path

from .consumers import ChatConsumer, NotFoundConsumer

websocket_urlpatterns = [
    path("ws/conversations/<uuid:conversation_id>/", ChatConsumer.as_asgi()),
    # Last: an unknown path is a 4404 close, not a routing error (a 500 with a traceback).
    re_path(r"", NotFoundConsumer.as_asgi()),
]
