"""Models of the conversations app."""

from django.db import models  # noqa: F401
