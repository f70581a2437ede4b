"""Models of the agents app."""

from django.db import models  # noqa: F401
