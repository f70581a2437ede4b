"""Models of the workspaces app."""

from django.db import models  # noqa: F401
