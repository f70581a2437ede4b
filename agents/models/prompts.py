"""Prompt templates: operators' ``/name`` shortcuts, expanded into the message a person sends."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

__all__ = ["INPUT", "RESERVED", "PromptTemplate", "expand", "validate_template_name"]

# Where the text typed after ``/name`` goes.
INPUT = "{{input}}"
# The chat's own commands: no template may take their names.
RESERVED = ("compact", "continue", "skill")


def validate_template_name(value: str) -> None:
    """Refuse the name of a built-in command (in any case)."""
    if value.casefold() in RESERVED:
        raise ValidationError(
            "/%(name)s is a built-in command; choose another name.",
            code="reserved",
            params={"name": value},
        )


def expand(template: str, rest: str) -> str:
    """What ``/name rest`` sends: ``rest`` in place of every ``{{input}}``, or appended after
    a blank line when the template has no placeholder; trimmed."""
    if INPUT in template:
        return template.replace(INPUT, rest).strip()
    if not rest:
        return template.strip()
    return f"{template.rstrip()}\n\n{rest}".strip()


class PromptTemplateQuerySet(models.QuerySet["PromptTemplate"]):
    def suggestions(self) -> list[dict[str, str]]:
        """The enabled templates as the composer lists them: ``[{name, description}]``."""
        return list(self.filter(enabled=True).order_by("name").values("name", "description"))

    def expansion(self, name: str, rest: str) -> str | None:
        """What ``/name rest`` sends, or ``None`` when no enabled template is named ``name``."""
        text = self.filter(name=name, enabled=True).values_list("text", flat=True).first()
        return None if text is None else expand(text, rest)


class PromptTemplate(models.Model):
    """A ``/name`` shortcut the chat expands just before the run; ``//name`` sends the text
    ``/name`` itself, and a ``/word`` no template has stays text."""

    objects = PromptTemplateQuerySet.as_manager()

    name = models.SlugField(
        "name",
        max_length=64,
        unique=True,
        validators=[validate_template_name],
        help_text="Typed as /name in the chat: letters, digits, - and _ "
        "(not compact, continue or skill).",
    )
    description = models.CharField(
        "description",
        max_length=200,
        blank=True,
        help_text="Shown beside /name in the composer's suggestions as the user types /.",
    )
    text = models.TextField(
        "text",
        help_text="What /name sends. {{input}} is replaced by whatever the user types after "
        "/name; a text without {{input}} gets it appended after a blank line.",
    )
    enabled = models.BooleanField("enabled", default=True)
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)

    class Meta:
        verbose_name = "prompt template"
        verbose_name_plural = "prompt templates"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=~Q(name__in=RESERVED), name="agents_prompt_template_not_reserved"
            ),
        ]

    def __str__(self) -> str:
        return f"/{self.name}"

    def expand(self, rest: str) -> str:
        """What ``/name rest`` sends with this template."""
        return expand(self.text, rest)
