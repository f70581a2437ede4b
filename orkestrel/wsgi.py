"""WSGI entry point (HTTP only; the chat needs ASGI)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "orkestrel.settings")
application = get_wsgi_application()
