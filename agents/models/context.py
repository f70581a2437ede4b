"""Scopes and instructions: what a profile's context lets through and says."""

from __future__ import annotations

from typing import Any

from django.db import models

from orkestrel.core import Scope as CoreScope
from orkestrel.core import create_scope

from ..validators import (
    validate_name_list,
)


def _allow_list(label: str, what: str) -> models.JSONField:
    """A three-way allow-list column: ``null`` = all, ``[]`` = none, a list = only those."""
    return models.JSONField(
        label,
        null=True,
        blank=True,
        default=None,
        validators=[validate_name_list],
        help_text=f"{what}: null = all, [] = none, a list = only those.",
    )


class Scope(models.Model):
    """A named allow-list over instructions, tools and files (``null`` = no constraint)."""

    name = models.CharField("name", max_length=100, unique=True)
    instructions = _allow_list("instructions", "Instruction names")
    tools = _allow_list("tools", "Tool names")
    files = _allow_list("files", "Workspace file paths")

    class Meta:
        verbose_name = "scope"
        verbose_name_plural = "scopes"
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def to_core(self) -> CoreScope:
        """The kit's immutable ``Scope`` for this row."""
        return create_scope(
            name=self.name, instructions=self.instructions, tools=self.tools, files=self.files
        )


class Instruction(models.Model):
    """A named directive added to agents' prompts (higher priority first)."""

    name = models.CharField("name", max_length=100, unique=True)
    content = models.TextField("content")
    priority = models.IntegerField("priority", default=0, help_text="Higher sorts first.")
    format = models.TextField(
        "format override", blank=True, help_text="A fully rendered replacement for this item."
    )
    enabled = models.BooleanField("enabled", default=True)

    class Meta:
        verbose_name = "instruction"
        verbose_name_plural = "instructions"
        ordering = ["-priority", "name"]

    def __str__(self) -> str:
        return self.name

    def to_core_input(self) -> dict[str, Any]:
        """The ``InstructionManager.add`` input for this row."""
        return {
            "name": self.name,
            "content": self.content,
            "priority": self.priority,
            "format": self.format or None,
        }
