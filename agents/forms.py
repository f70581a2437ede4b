"""Forms for the agents admin: readable JSON editing, rule rows, and the policy evaluator."""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from .models import AuthorityRule

__all__ = ["AuthorityRuleForm", "EvaluateCallForm", "PrettyJSONField"]


class PrettyJSONField(forms.JSONField):
    """A JSON form field that shows its value indented, so schemas read well when edited."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, ensure_ascii=False, indent=2, cls=self.encoder)


class AuthorityRuleForm(forms.ModelForm):
    """A rule row; positions are checked across the rows, not row by row against the database.

    Rules are reordered by editing positions in one save (1 and 2 swapped, say): row by row,
    each new position is still taken by the other rule until both are saved. The formset checks
    the rows against each other and the admin frees the old positions before saving.
    """

    class Meta:
        model = AuthorityRule
        fields = ["position", "tool_glob", "conditions", "zone", "verdict", "approver", "reason"]
        widgets = {
            "conditions": forms.Textarea(attrs={"rows": 2, "cols": 40}),
            "reason": forms.TextInput(attrs={"size": 30}),
        }

    def validate_constraints(self) -> None:
        # Both helpers are ``BaseModelForm``'s own (its ``validate_constraints`` calls them);
        # django-stubs leaves the private methods out.
        exclude = self._get_validation_exclusions() | {"position"}  # type: ignore[attr-defined]
        try:
            self.instance.validate_constraints(exclude=exclude)
        except ValidationError as error:
            self._update_errors(error)  # type: ignore[attr-defined]


class EvaluateCallForm(forms.Form):
    """A hypothetical tool call to try against a policy."""

    tool_name = forms.CharField(label="Tool name", max_length=200)
    arguments = forms.CharField(
        label="Arguments (JSON object)",
        initial="{}",
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "cols": 60}),
    )

    def clean_arguments(self) -> dict[str, Any]:
        text = (self.cleaned_data.get("arguments") or "").strip() or "{}"
        try:
            value = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValidationError(f"Not valid JSON: {error.msg} (line {error.lineno}).") from error
        if not isinstance(value, dict):
            raise ValidationError("The arguments must be a JSON object, such as {}.")
        return value
