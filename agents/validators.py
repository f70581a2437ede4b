"""Field validators for the agents app's models.

Each raises ``django.core.exceptions.ValidationError`` with a message an operator can act on;
the models attach them to fields, so a bad value comes back as that field's error.
"""

from __future__ import annotations

import fnmatch
import re
import string
from collections.abc import Iterable
from typing import Any

import jsonschema
from django.core.exceptions import ValidationError

__all__ = [
    "ENV_NAME_PATTERN",
    "TOOL_NAME_PATTERN",
    "default_parameters",
    "looks_like_secret",
    "template_placeholders",
    "validate_env_name",
    "validate_glob",
    "validate_header_env",
    "validate_name_list",
    "validate_parameters_schema",
    "validate_positive",
    "validate_tool_name",
    "validate_url_template",
]

ENV_NAME_PATTERN = re.compile(r"^[A-Z_][A-Z0-9_]*$")
TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# RFC 9110 token characters: what a header field name may contain.
HEADER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

# Prefixes of well-known credential formats (OpenAI, Anthropic, Groq, xAI, Google, GitHub,
# Hugging Face, Slack, AWS): a value starting with one is a key pasted in the wrong box.
_SECRET_PREFIXES = (
    "sk-",
    "sk_",
    "pk-",
    "rk-",
    "gsk_",
    "xai-",
    "aiza",
    "ghp_",
    "gho_",
    "github_pat_",
    "hf_",
    "xoxb-",
    "xoxp-",
    "akia",
    "bearer ",
)


def looks_like_secret(value: str) -> bool:
    """Whether ``value`` looks like a credential rather than an environment variable's name."""
    text = value.strip()
    if text.lower().startswith(_SECRET_PREFIXES):
        return True
    # Names are words joined by underscores; a long run of mixed letters and digits is a token.
    return len(text) >= 24 and "_" not in text and any(c.isdigit() for c in text)


def validate_env_name(value: str) -> None:
    """An environment variable's NAME (``OPENAI_API_KEY``), never the secret it holds."""
    if looks_like_secret(value):
        raise ValidationError(
            "This looks like an API key. Store the key in an environment variable and enter "
            "that variable's name here (for example OPENAI_API_KEY).",
            code="secret",
        )
    if not ENV_NAME_PATTERN.match(value):
        raise ValidationError(
            "Enter an environment variable name: capital letters, digits and underscores, "
            "not starting with a digit (for example OPENAI_API_KEY).",
            code="invalid",
        )


def validate_positive(value: float) -> None:
    """A strictly positive number (durations)."""
    if value is None or not value > 0:
        raise ValidationError("Must be greater than zero.", code="min_value")


def validate_tool_name(value: str) -> None:
    """A tool name providers accept: 1 to 64 letters, digits, ``_`` or ``-``."""
    if not TOOL_NAME_PATTERN.match(value or ""):
        raise ValidationError(
            "Use 1 to 64 letters, digits, underscores or hyphens.", code="invalid"
        )


def validate_name_list(value: Any) -> None:
    """``None`` (no constraint) or a list of distinct non-empty strings."""
    if value is None:
        return
    if not isinstance(value, list):
        raise ValidationError("Enter null (no constraint) or a JSON list of names.", code="invalid")
    for item in value:
        if not isinstance(item, str) or not item.strip():
            raise ValidationError(
                "Every entry must be a non-empty string, not %(item)r.",
                code="invalid",
                params={"item": item},
            )
    if len(set(value)) != len(value):
        raise ValidationError("The list names an entry twice.", code="duplicate")


def default_parameters() -> dict[str, Any]:
    """The parameters schema of a tool that takes no arguments."""
    return {"type": "object", "properties": {}}


def validate_parameters_schema(value: Any) -> None:
    """A valid JSON Schema (draft 2020-12) describing an object."""
    if not isinstance(value, dict):
        raise ValidationError("Enter a JSON Schema object.", code="invalid")
    try:
        jsonschema.Draft202012Validator.check_schema(value)
    except jsonschema.SchemaError as error:
        raise ValidationError(
            "Not a valid JSON Schema: %(message)s",
            code="invalid_schema",
            params={"message": error.message},
        ) from error
    if value.get("type") != "object":
        raise ValidationError(
            'Tool parameters must be a schema with "type": "object".', code="not_object"
        )


def template_placeholders(template: str) -> list[str]:
    """The placeholder names in a ``str.format`` template, in order; ``ValueError`` if malformed."""
    names = []
    for _literal, field, _spec, _conversion in string.Formatter().parse(template):
        if field is not None:
            names.append(field)
    return names


def validate_url_template(template: str, parameters: Iterable[str]) -> None:
    """An http(s) URL whose ``{placeholders}`` are bare names of declared parameters."""
    if not template.startswith(("http://", "https://")):
        raise ValidationError("The URL must start with http:// or https://.", code="scheme")
    try:
        names = template_placeholders(template)
    except ValueError as error:
        raise ValidationError(
            "Malformed template: %(message)s", code="malformed", params={"message": str(error)}
        ) from error
    known = set(parameters)
    for name in names:
        if not name.isidentifier():
            # ``{}``, ``{0}``, ``{a.b}`` and ``{a[0]}`` would reach into arguments' attributes.
            raise ValidationError(
                "Placeholder {%(name)s} must be a parameter name.",
                code="placeholder",
                params={"name": name},
            )
        if name not in known:
            raise ValidationError(
                "Placeholder {%(name)s} is not one of the tool's parameters.",
                code="unknown_placeholder",
                params={"name": name},
            )


def validate_header_env(value: Any) -> None:
    """A mapping of HTTP header name to the environment variable holding its value."""
    if not isinstance(value, dict):
        raise ValidationError(
            'Enter a JSON object such as {"Authorization": "SERVICE_TOKEN"}.', code="invalid"
        )
    for header, env in value.items():
        if not HEADER_NAME_PATTERN.match(header):
            raise ValidationError(
                "%(header)r is not a valid header name.", code="header", params={"header": header}
            )
        if not isinstance(env, str):
            raise ValidationError(
                "The value for %(header)s must be an environment variable name.",
                code="invalid",
                params={"header": header},
            )
        validate_env_name(env)


def validate_glob(value: str) -> None:
    """A non-empty ``fnmatch`` glob over tool names (``delete_*``, ``*``)."""
    if not value or not value.strip():
        raise ValidationError("Enter a tool-name pattern, such as delete_* or *.", code="blank")
    if value != value.strip():
        raise ValidationError("The pattern has leading or trailing spaces.", code="whitespace")
    try:
        re.compile(fnmatch.translate(value))
    except re.error as error:
        raise ValidationError(
            "Not a valid pattern: %(message)s", code="invalid", params={"message": str(error)}
        ) from error
