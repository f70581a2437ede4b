"""Forms for the agents admin: name lists, the model picker, rule rows, the policy evaluator.

Operators edit lists of names one per line and pick a profile's model from the endpoints'
lists; what is stored is the same JSON as before (a list of strings, or ``null`` for a scope
column without a constraint).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.renderers import BaseRenderer
from django.utils.html import escape, format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from .models import AgentProfile, AuthorityRule, ProviderEndpoint, Scope

if TYPE_CHECKING:
    from django.core.files.uploadedfile import UploadedFile
    from django.utils.datastructures import MultiValueDict

__all__ = [
    "AllowListField",
    "AuthorityRuleForm",
    "EndpointForm",
    "EvaluateCallForm",
    "NameListField",
    "PrettyJSONField",
    "ProfileForm",
    "ScopeForm",
    "model_suggestions",
]

# Scripts the widgets need; CSP allows same-origin files only (no inline script).
ALLOW_LIST_SCRIPT = "orkestrel/admin/allow-list.js"


class PrettyJSONField(forms.JSONField):
    """A JSON form field that shows its value indented, so schemas read well when edited."""

    def prepare_value(self, value: Any) -> Any:
        if isinstance(value, forms.fields.InvalidJSONInput):
            return value
        return json.dumps(value, ensure_ascii=False, indent=2, cls=self.encoder)


# -- lists of names, one per line ---------------------------------------------------------------


class NameListTextarea(forms.Textarea):
    """A textarea holding one name per line."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__({"rows": 4, "cols": 40, "spellcheck": "false", **(attrs or {})})

    def format_value(self, value: Any) -> str | None:
        if isinstance(value, list | tuple):
            return "\n".join(str(item) for item in value)
        return super().format_value(value)


def parse_names(text: str) -> list[str]:
    """One name per line (blank lines skipped), or a pasted JSON list of strings."""
    stripped = text.strip()
    if stripped.startswith("["):
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError:
            value = None
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [item.strip() for item in value if item.strip()]
    return [line.strip() for line in text.splitlines() if line.strip()]


def _check_distinct(names: Sequence[str]) -> None:
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValidationError(
                "%(name)s is listed twice.", code="duplicate", params={"name": name}
            )
        seen.add(name)


class NameListField(forms.Field):
    """A list of distinct names, typed one per line; stored as a JSON list of strings."""

    widget = NameListTextarea

    def to_python(self, value: Any) -> list[str]:
        if isinstance(value, list):
            return value
        names = parse_names(value or "")
        _check_distinct(names)
        return names

    def prepare_value(self, value: Any) -> Any:
        return "\n".join(value) if isinstance(value, list) else value


# -- scope columns: all, none, or only those listed ---------------------------------------------


@dataclass(frozen=True, slots=True)
class AllowListInput:
    """What the browser sent for an allow list: the chosen mode and the typed names."""

    mode: str | None
    text: str


class AllowListWidget(forms.MultiWidget):
    """Three choices (all, none, only these) and a box of names, one per line."""

    def __init__(self, noun: str, example: Sequence[str]) -> None:
        modes = [
            ("all", f"All {noun} (no constraint)"),
            ("none", f"No {noun}"),
            ("only", f"Only these {noun}, one per line:"),
        ]
        names = NameListTextarea(
            {
                "aria-label": f"{noun.capitalize()}, one per line",
                "placeholder": "\n".join(example),
                "data-allow-list": "",
            }
        )
        super().__init__({"mode": forms.RadioSelect(choices=modes), "": names})

    class Media:
        js = [ALLOW_LIST_SCRIPT]

    def decompress(self, value: Any) -> list[Any]:
        return _allow_parts(value)

    # A value of its own type, not MultiWidget's list: a stored scope column is a list too, and
    # the field must tell what the browser sent from what the row holds.
    def value_from_datadict(  # type: ignore[override]
        self, data: Mapping[str, Any], files: MultiValueDict[str, UploadedFile[Any]], name: str
    ) -> AllowListInput:
        mode, text = super().value_from_datadict(data, files, name)
        return AllowListInput(mode=mode, text=text or "")


def _allow_parts(value: Any) -> list[Any]:
    """The widget's parts (mode, text) for a stored value or what the browser sent."""
    if isinstance(value, AllowListInput):
        return [value.mode, value.text]
    if value is None:
        return ["all", ""]
    if isinstance(value, list):
        return ["only", "\n".join(str(item) for item in value)] if value else ["none", ""]
    return ["only", str(value)]


class AllowListField(forms.Field):
    """A scope column: ``None`` (all), ``[]`` (none) or the names listed, one per line."""

    def __init__(self, *, noun: str, example: Sequence[str], **kwargs: Any) -> None:
        kwargs.setdefault("required", False)
        super().__init__(widget=AllowListWidget(noun, example), **kwargs)

    def to_python(self, value: Any) -> list[str] | None:
        if not isinstance(value, AllowListInput):
            return value  # an initial value, already stored
        match value.mode:
            case "all":
                return None
            case "none":
                return []
            case "only":
                names = parse_names(value.text)
                if not names:
                    raise ValidationError("List at least one name, or choose none.", code="empty")
                _check_distinct(names)
                return names
        raise ValidationError("Choose all, none, or only those listed.", code="mode")

    def prepare_value(self, value: Any) -> Any:
        return _allow_parts(value)


# -- a profile's model: <endpoint>/<model>, offered from the endpoints' lists -------------------


def model_suggestions() -> list[tuple[str, str]]:
    """``(value, label)`` for the profile's model box: each endpoint's listed models, and
    ``name/`` for an endpoint that lists none (any model of it may follow the slash)."""
    offered: list[tuple[str, str]] = []
    for endpoint in ProviderEndpoint.objects.order_by("name"):
        listed = endpoint.models if isinstance(endpoint.models, list) else []
        if listed:
            offered.extend((f"{endpoint.name}/{model}", str(endpoint)) for model in listed)
        else:
            offered.append((f"{endpoint.name}/", f"{endpoint}: any model, typed after the /"))
    return offered


class ModelNameInput(forms.TextInput):
    """A text box with a list of suggestions (``<datalist>``): pick one or type."""

    def __init__(self, attrs: dict[str, Any] | None = None) -> None:
        super().__init__(
            {"size": 40, "autocomplete": "off", "spellcheck": "false", **(attrs or {})}
        )
        self.suggestions: list[tuple[str, str]] = []

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        context["widget"]["attrs"]["list"] = self._list_id(context["widget"]["attrs"], name)
        return context

    def render(
        self,
        name: str,
        value: Any,
        attrs: dict[str, Any] | None = None,
        renderer: BaseRenderer | None = None,
    ) -> SafeString:
        box = super().render(name, value, attrs, renderer)
        options = format_html_join(
            "", '<option value="{}">{}</option>', ((v, label) for v, label in self.suggestions)
        )
        datalist = format_html(
            '<datalist id="{}">{}</datalist>', self._list_id(attrs, name), options
        )
        return mark_safe(box + datalist)

    @staticmethod
    def _list_id(attrs: Mapping[str, Any] | None, name: str) -> str:
        return f"{(attrs or {}).get('id') or f'id_{name}'}_suggestions"


MODEL_HELP = escape(
    "The endpoint's name, a slash, then the model: <endpoint-name>/<model>, e.g. "
    "local/llama3.2 or router/meta-llama/llama-3. The list offers every model the endpoints "
    "list; an endpoint that lists none takes any model name after its slash."
)


class ProfileForm(forms.ModelForm):
    """An agent profile, its model picked from the endpoints' lists (or typed)."""

    class Meta:
        model = AgentProfile
        fields = "__all__"
        widgets = {"model": ModelNameInput}
        help_texts = {"model": MODEL_HELP}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields.get("model")
        if field is not None and isinstance(field.widget, ModelNameInput):
            field.widget.suggestions = model_suggestions()


class EndpointForm(forms.ModelForm):
    """A provider endpoint, its models typed one per line."""

    models = NameListField(
        label="Models",
        required=False,
        widget=NameListTextarea({"placeholder": "llama3.2\nqwen2.5-coder:7b"}),
        help_text="The model names this endpoint serves, one per line, e.g. llama3.2 or "
        "gpt-4o-mini; profiles may use only these. Empty: any model.",
    )
    document_models = NameListField(
        label="Models that read PDFs",
        required=False,
        widget=NameListTextarea({"placeholder": "claude-sonnet-4-5\ngpt-4o"}),
        help_text="Models that receive a PDF itself, one per line, or * for all; the others "
        "receive its extracted text. Empty: every model reads the text.",
    )

    class Meta:
        model = ProviderEndpoint
        fields = "__all__"


def _scope_help(what: str, example: Iterable[str]) -> str:
    return escape(f"Which {what} profiles with this scope see, e.g. {', '.join(example)}.")


TOOL_EXAMPLE = ("workspace", "http_fetch")
INSTRUCTION_EXAMPLE = ("tone", "house-rules")
FILE_EXAMPLE = ("notes.md", "src/app.py")


class ScopeForm(forms.ModelForm):
    """A scope, each of its columns all, none, or only the names listed."""

    instructions = AllowListField(
        label="Instructions",
        noun="instructions",
        example=INSTRUCTION_EXAMPLE,
        help_text=_scope_help("instructions", INSTRUCTION_EXAMPLE),
    )
    tools = AllowListField(
        label="Tools",
        noun="tools",
        example=TOOL_EXAMPLE,
        help_text=_scope_help("tools", TOOL_EXAMPLE),
    )
    # The form metaclass takes declared fields off the class: this is the scope's column, and
    # ``BaseForm.files`` (uploads) is untouched.
    files = AllowListField(  # type: ignore[assignment]
        label="Files",
        noun="files",
        example=FILE_EXAMPLE,
        help_text=_scope_help("workspace files (paths)", FILE_EXAMPLE),
    )

    class Meta:
        model = Scope
        fields = "__all__"


# -- authority rules and the evaluator ----------------------------------------------------------


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
            "position": forms.NumberInput(attrs={"class": "vSmallField"}),
            "tool_glob": forms.TextInput(attrs={"size": 20}),
            "conditions": forms.Textarea(attrs={"rows": 3, "cols": 60}),
            "zone": forms.TextInput(attrs={"size": 12}),
            "reason": forms.TextInput(attrs={"size": 60}),
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
