"""Skills: instructions operators offer for a conversation to take up when it needs them."""

from __future__ import annotations

from django.db import models

from .context import Instruction

__all__ = ["Skill"]


class Skill(models.Model):
    """An instruction offered as a skill: in no prompt until a conversation activates it (the
    user with ``/skill name``, the model with the ``skills`` tool), then in every later run of
    that conversation. A profile that lists the instruction itself always has it."""

    instruction = models.OneToOneField(
        Instruction,
        on_delete=models.CASCADE,
        related_name="skill",
        verbose_name="instruction",
        help_text="Its name is the skill's name (/skill <name>); it is offered while enabled.",
    )
    description = models.CharField(
        "description",
        max_length=300,
        help_text="When it helps: the catalogue shows this to the model and to the user.",
    )
    created = models.DateTimeField("created", auto_now_add=True)

    class Meta:
        verbose_name = "skill"
        verbose_name_plural = "skills"
        ordering = ["instruction__name"]

    def __str__(self) -> str:
        return self.instruction.name
