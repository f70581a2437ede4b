"""Provider endpoints: where models live, and the name of the variable holding the key."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from django.apps import apps
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator
from django.db import models
from django.db.models import Q

from orkestrel.core import ProviderError

from ..validators import (
    key_variable_problem,
    validate_key_variable,
    validate_name_list,
    validate_positive,
)
from .prices import Prices, validate_prices


class ProviderEndpoint(models.Model):
    """Where a model is served, and how to reach it (the key stays in the environment)."""

    class Kind(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible"
        ANTHROPIC = "anthropic", "Anthropic"
        OLLAMA = "ollama", "Ollama"
        SCRIPTED = "scripted", "Scripted (tests and demos)"

    name = models.SlugField("name", max_length=64, unique=True)
    kind = models.CharField("kind", max_length=16, choices=Kind.choices)
    enabled = models.BooleanField(
        "enabled",
        default=True,
        help_text="Off: its models leave the model pickers and /v1/models, and a conversation "
        "or profile using one is refused (409 model_unavailable) until it is on again.",
    )
    base_url = models.URLField(
        "base URL", max_length=500, blank=True, help_text="Blank only for scripted endpoints."
    )
    api_key_env = models.CharField(
        "API key variable",
        max_length=128,
        blank=True,
        validators=[validate_key_variable],
        help_text="The NAME of the environment variable holding the key (never the key), "
        "e.g. OPENAI_API_KEY: a name ending in _API_KEY or _TOKEN, or matching "
        "ORKESTREL_KEY_VARIABLES.",
    )
    connect_timeout = models.FloatField(
        "connect timeout (s)", default=10.0, validators=[validate_positive]
    )
    read_timeout = models.FloatField(
        "read timeout (s)", default=300.0, validators=[validate_positive]
    )
    first_token_timeout = models.FloatField(
        "first-token timeout (s)",
        default=60.0,
        null=True,
        blank=True,
        validators=[validate_positive],
        help_text="How soon the answer must begin after a request; a hung model is found in "
        "seconds, not after the read timeout. Empty: the read timeout only.",
    )
    stream_idle_timeout = models.FloatField(
        "stream idle timeout (s)",
        default=30.0,
        null=True,
        blank=True,
        validators=[validate_positive],
        help_text="How long the answer may pause once it has begun; a model that stops "
        "mid-answer ends the run in seconds, keeping the text so far, not after the read "
        "timeout. Raise it for a model that goes silent to think mid-answer. Empty: the read "
        "timeout only.",
    )
    max_retries = models.PositiveSmallIntegerField(
        "max retries", default=2, validators=[MaxValueValidator(10)]
    )
    prices = models.JSONField(
        "prices",
        default=dict,
        blank=True,
        validators=[validate_prices],
        help_text="USD per million tokens, by model name: "
        '{"gpt-4o-mini": {"input": 0.15, "output": 0.6, "cache_read": 0.075, '
        '"cache_write": 0}}. A model without prices has no cost shown (not a cost of 0).',
    )
    document_models = models.JSONField(
        "models reading documents",
        default=list,
        blank=True,
        validators=[validate_name_list],
        help_text="Model names here that read PDF files themselves (Anthropic document blocks, "
        'OpenAI file parts), as a JSON list; ["*"] for every model. The others, and every '
        "DOCX or text file, get the text extracted from the document.",
    )
    created = models.DateTimeField("created", auto_now_add=True)
    updated = models.DateTimeField("updated", auto_now=True)
    # Defined last: inside this class body the name ``models`` then means this field.
    models = models.JSONField(
        "models",
        default=list,
        blank=True,
        validators=[validate_name_list],
        help_text="Model names served here, as a JSON list; empty allows any.",
    )

    class Meta:
        verbose_name = "provider endpoint"
        verbose_name_plural = "provider endpoints"
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(kind__in=["openai", "anthropic", "ollama", "scripted"]),
                name="agents_endpoint_kind_valid",
            ),
            models.CheckConstraint(
                condition=Q(kind="scripted") | ~Q(base_url=""),
                name="agents_endpoint_base_url_required",
            ),
            models.CheckConstraint(
                condition=Q(connect_timeout__gt=0) & Q(read_timeout__gt=0),
                name="agents_endpoint_timeouts_positive",
            ),
            models.CheckConstraint(
                condition=Q(max_retries__lte=10), name="agents_endpoint_max_retries_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_kind_display()})"

    def clean(self) -> None:
        super().clean()
        errors: dict[str, str] = {}
        if self.kind != self.Kind.SCRIPTED and not self.base_url:
            errors["base_url"] = "Enter the endpoint's base URL."
        elif "@" in urlsplit(self.base_url or "").netloc:
            # A URL is shown in lists and logs: credentials belong in the key variable.
            errors["base_url"] = "Put credentials in the key variable, not in the URL."
        if self.models is None:
            self.models = []
        if self.prices is None:
            self.prices = {}
        listed = self.models if isinstance(self.models, list) else []
        if listed and isinstance(self.prices, dict):
            unlisted = sorted(set(self.prices) - set(listed))
            if unlisted:
                errors["prices"] = f"Prices name models this endpoint does not serve: {unlisted}."
        errors.update(self._profile_errors())
        if errors:
            raise ValidationError(errors)

    def _profile_errors(self) -> dict[str, str]:
        """Profiles name this endpoint in their ``model``: keep them pointing somewhere real."""
        if self.pk is None:
            return {}
        stored = ProviderEndpoint.objects.filter(pk=self.pk).values_list("name", flat=True).first()
        if stored is None:
            return {}
        # Looked up by name: profiles import endpoints, not the other way round.
        profiles = apps.get_model("agents", "AgentProfile")
        users = list(profiles.objects.filter(model__startswith=f"{stored}/"))
        if not users:
            return {}
        errors = {}
        if stored != self.name:
            slugs = ", ".join(profile.slug for profile in users)
            errors["name"] = f"Profiles use this endpoint by name ({slugs}); change them first."
        listed = self.models if isinstance(self.models, list) else []
        if listed and all(isinstance(name, str) for name in listed):
            missing = sorted({profile.model_name for profile in users} - set(listed))
            if missing:
                errors["models"] = f"Profiles use models missing from the list: {missing}."
        return errors

    def reads_documents(self, model: str) -> bool:
        """Whether ``model`` here takes a PDF natively (``document_models``)."""
        listed = self.document_models if isinstance(self.document_models, list) else []
        return "*" in listed or model in listed

    def price_of(self, model: str) -> Prices | None:
        """The prices of ``model`` here (``None``: not priced)."""
        prices = self.prices.get(model) if isinstance(self.prices, dict) else None
        return prices if isinstance(prices, dict) and prices else None

    def api_key_problem(self) -> str | None:
        """Why ``api_key_env`` may not be read (``key_variable_problem``), or ``None``."""
        return key_variable_problem(self.api_key_env) if self.api_key_env else None

    def api_key(self) -> str | None:
        """The key from the environment variable named by ``api_key_env`` (``None`` if unset).

        Raises ``ProviderError`` for a name no key may have (``SECRET_KEY``, ``DATABASE_URL``,
        or one outside the allowed patterns): a row saved around validation must not send
        the project's own secrets to its URL. The variable is not read at all then.
        """
        if not self.api_key_env:
            return None
        problem = self.api_key_problem()
        if problem is not None:
            raise ProviderError(
                f"endpoint {self.name!r}: refused its key variable: {problem}", provider=self.name
            )
        return os.environ.get(self.api_key_env) or None

    @property
    def api_key_set(self) -> bool:
        """Whether the key's variable is allowed and set (safe to show; the key is not)."""
        return self.api_key_problem() is None and self.api_key() is not None
