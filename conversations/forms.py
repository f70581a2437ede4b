"""Forms of the chat UI: start, rename and search conversations."""

from __future__ import annotations

from typing import Any

from django import forms

from agents.models import AgentProfile

from .models import Conversation
from .services import default_profile, enabled_profiles

__all__ = ["NewConversationForm", "RenameConversationForm", "SearchForm"]

TITLE_MAX = Conversation._meta.get_field("title").max_length


class ProfileChoiceField(forms.ModelChoiceField):
    """Shows a profile by its name (the slug is an operator's detail)."""

    def label_from_instance(self, obj: AgentProfile) -> str:
        return obj.name


class NewConversationForm(forms.Form):
    """Pick an agent profile (the default preselected) and optionally a title."""

    profile = ProfileChoiceField(
        queryset=AgentProfile.objects.none(),
        required=False,
        empty_label=None,
        label="Agent",
        widget=forms.Select(attrs={"data-testid": "profile-select"}),
    )
    title = forms.CharField(
        max_length=TITLE_MAX,
        required=False,
        label="Title",
        widget=forms.TextInput(attrs={"placeholder": "Optional title"}),
    )

    def __init__(self, *args: Any, user: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["profile"]
        assert isinstance(field, forms.ModelChoiceField)
        field.queryset = enabled_profiles(user)
        chosen = default_profile(user)
        if chosen is not None:
            field.initial = chosen.pk


class RenameConversationForm(forms.Form):
    title = forms.CharField(max_length=TITLE_MAX, label="Title", strip=True)


class SearchForm(forms.Form):
    q = forms.CharField(max_length=200, required=False, label="Search conversations", strip=True)
