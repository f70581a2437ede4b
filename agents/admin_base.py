"""What every admin page of the agents app shares: model help texts shown as the text they
are, labelled row checkboxes, JSON fields edited pretty-printed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.contrib import admin
from django.db import models
from django.forms import Field as FormField
from django.http import HttpRequest
from django.utils.html import conditional_escape
from django.utils.text import capfirst

from .forms import PrettyJSONField

__all__ = ["JSON_OVERRIDES", "OperatorAdmin", "labelled_rows", "readable_help"]

JSON_OVERRIDES: Mapping[type[models.Field[Any, Any]], Mapping[str, Any]] = {
    models.JSONField: {"form_class": PrettyJSONField}
}


def readable_help(formfield: FormField | None) -> FormField | None:
    """Escape a field's help text: the admin shows it as HTML, and ours is plain text (a
    ``<endpoint-name>`` in it would otherwise vanish as an unknown tag)."""
    if formfield is not None and formfield.help_text:
        formfield.help_text = conditional_escape(formfield.help_text)
    return formfield


class OperatorAdmin(admin.ModelAdmin):
    """The agents app's admin pages: model help texts shown as the text they are."""

    def formfield_for_dbfield(
        self, db_field: models.Field[Any, Any], request: HttpRequest, **kwargs: Any
    ) -> FormField | None:
        return readable_help(super().formfield_for_dbfield(db_field, request, **kwargs))

    def get_changelist_form(self, request: HttpRequest, **kwargs: Any) -> type[forms.ModelForm]:
        return labelled_rows(super().get_changelist_form(request, **kwargs))


def labelled_rows(base: type[forms.ModelForm]) -> type[forms.ModelForm]:
    """A changelist's row form whose editable boxes say which row they are in (a bare
    checkbox in a table cell has no label for a screen reader)."""

    class LabelledRowForm(base):  # type: ignore[misc,valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            for field in self.fields.values():
                field.widget.attrs["aria-label"] = f"{capfirst(field.label)}: {self.instance}"

    return LabelledRowForm
