"""Field validators for the agents app's models.

Each raises ``django.core.exceptions.ValidationError`` with a message an operator can act on;
the models attach them to fields, so a bad value comes back as that field's error.
"""

from __future__ import annotations

import ast
import fnmatch
import functools
import importlib.util
import os
import re
import string
from collections.abc import Iterable
from typing import Any

import jsonschema
from django.conf import ENVIRONMENT_VARIABLE, settings
from django.core.exceptions import ValidationError

from .sandbox import COMMAND_PATH, hidden_roots, resolve_program

__all__ = [
    "DEFAULT_KEY_VARIABLES",
    "MAX_ARGV",
    "MAX_COMMAND_TIMEOUT",
    "MAX_OUTPUT_LIMIT",
    "ENV_NAME_PATTERN",
    "PROJECT_VARIABLES",
    "TOOL_NAME_PATTERN",
    "default_parameters",
    "json_pointer_tokens",
    "key_variable_patterns",
    "key_variable_problem",
    "looks_like_secret",
    "project_variables",
    "template_origin_problem",
    "template_placeholders",
    "validate_env_name",
    "validate_argv",
    "validate_argv_placeholders",
    "validate_command_timeout",
    "validate_glob",
    "validate_header_env",
    "validate_json_pointer",
    "validate_key_variable",
    "validate_name_list",
    "validate_output_limit",
    "validate_parameters_schema",
    "validate_positive",
    "validate_program",
    "validate_tool_name",
    "validate_url_template",
]

ENV_NAME_PATTERN = re.compile(r"^[A-Z_][A-Z0-9_]*$")
TOOL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# RFC 9110 token characters: what a header field name may contain.
HEADER_NAME_PATTERN = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
# A JSON Pointer's ~ escapes only ~0 and ~1.
_BAD_ESCAPE = re.compile(r"~(?![01])")

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


# What a key variable may be called; ``ORKESTREL["KEY_VARIABLES"]`` adds globs to these.
DEFAULT_KEY_VARIABLES = ("*_API_KEY", "*_TOKEN")
# Variables the project reads for itself, refused whatever the patterns say; the settings
# module's own ``env(...)`` names are added to these (see ``project_variables``).
PROJECT_VARIABLES = frozenset(
    {"SECRET_KEY", "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "DJANGO_SETTINGS_MODULE"}
)


def key_variable_patterns() -> tuple[str, ...]:
    """The globs a key variable's name must match: the defaults, then the configured ones."""
    configured = getattr(settings, "ORKESTREL", {}).get("KEY_VARIABLES") or ()
    if isinstance(configured, str):
        configured = configured.split(",")
    extra = tuple(glob.strip() for glob in configured if isinstance(glob, str) and glob.strip())
    return DEFAULT_KEY_VARIABLES + extra


def _read_name(node: ast.Call) -> str | None:
    # env("X"), env.bool("X"), env.db("X"), os.environ.get("X"), os.getenv("X")
    func = node.func
    if isinstance(func, ast.Name):
        reads = func.id == "env"
    elif isinstance(func, ast.Attribute):
        owner = func.value
        reads = (
            (isinstance(owner, ast.Name) and owner.id == "env")
            or (func.attr == "getenv" and isinstance(owner, ast.Name) and owner.id == "os")
            or (func.attr == "get" and isinstance(owner, ast.Attribute) and owner.attr == "environ")
        )
    else:
        reads = False
    if reads and node.args and isinstance(node.args[0], ast.Constant):
        value = node.args[0].value
        return value if isinstance(value, str) else None
    return None


@functools.cache
def _settings_variables(module: str | None) -> frozenset[str]:
    """The environment variables the settings module's source reads (a parse, not an import)."""
    try:
        spec = importlib.util.find_spec(module) if module else None
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return frozenset()
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read(), spec.origin)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _read_name(node)
            if name is not None:
                names.add(name)
            elif isinstance(node.func, ast.Attribute) and node.func.attr == "Env":
                # environ.Env(DEBUG=(bool, False), ...) declares variables by keyword.
                names.update(keyword.arg for keyword in node.keywords if keyword.arg)
    return frozenset(names)


def project_variables() -> frozenset[str]:
    """Every variable the project reads for itself: ``PROJECT_VARIABLES`` and settings.py's."""
    # The environment first: overridden settings (tests) report no SETTINGS_MODULE.
    module = os.environ.get(ENVIRONMENT_VARIABLE) or getattr(settings, "SETTINGS_MODULE", None)
    return PROJECT_VARIABLES | _settings_variables(module)


def key_variable_problem(name: str) -> str | None:
    """Why ``name`` may not hold a key sent to an endpoint or a tool, or ``None`` if it may."""
    if name in project_variables():
        return (
            f"{name!r} is one of this project's own settings: its value is never sent to an "
            "endpoint or a tool."
        )
    patterns = key_variable_patterns()
    if not any(fnmatch.fnmatchcase(name, glob) for glob in patterns):
        return (
            f"{name!r} is not an allowed key variable: use a name matching "
            f"{', '.join(patterns)} (ORKESTREL_KEY_VARIABLES adds patterns)."
        )
    return None


def validate_key_variable(value: str) -> None:
    """An environment variable's name that may hold a key (see ``key_variable_problem``)."""
    validate_env_name(value)
    problem = key_variable_problem(value)
    if problem is not None:
        raise ValidationError(problem, code="not_allowed")


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


def template_origin_problem(template: str) -> str | None:
    """Why ``template``'s scheme, host or port is not fixed text, or ``None`` if it is.

    The operator decides where a tool's requests go; the model only fills the path and query.
    """
    scheme, separator, rest = template.partition("://")
    ends = [index for index in (rest.find(mark) for mark in "/?#") if index >= 0]
    origin = scheme + separator + rest[: min(ends, default=len(rest))]
    if "{" in origin or "}" in origin:
        return "Placeholders may fill the path and query only, never the scheme, host or port."
    return None


def validate_url_template(template: str, parameters: Iterable[str]) -> None:
    """An http(s) URL whose ``{placeholders}`` are bare names of declared parameters.

    Placeholders may not appear in the scheme, host or port (``template_origin_problem``).
    """
    if not template.startswith(("http://", "https://")):
        raise ValidationError("The URL must start with http:// or https://.", code="scheme")
    problem = template_origin_problem(template)
    if problem is not None:
        raise ValidationError(problem, code="origin_placeholder")
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


def json_pointer_tokens(pointer: str) -> tuple[str, ...]:
    """An RFC 6901 JSON Pointer's reference tokens (``/a/b~1c`` is ``("a", "b/c")``).

    ``ValueError`` if malformed. The empty pointer (the whole document) is refused: a field
    is one part of a response, never all of it.
    """
    if not pointer.startswith("/"):
        raise ValueError("Enter a JSON Pointer starting with /, such as /notice or /meta/notes.")
    tokens = pointer[1:].split("/")
    if any(_BAD_ESCAPE.search(token) for token in tokens):
        raise ValueError("In a JSON Pointer ~ is followed by 0 (for ~) or 1 (for /).")
    # ~1 first: "~01" is the key "~1", not "/".
    return tuple(token.replace("~1", "/").replace("~0", "~") for token in tokens)


def validate_json_pointer(value: str) -> None:
    """A well-formed JSON Pointer into an HTTP tool's response (``json_pointer_tokens``)."""
    try:
        json_pointer_tokens(value)
    except ValueError as error:
        raise ValidationError(str(error), code="json_pointer") from error


def validate_header_env(value: Any) -> None:
    """A mapping of HTTP header name to the (allowed) environment variable holding its value."""
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
        validate_key_variable(env)


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


# Bounds of a command tool: its arguments, its output kept, its time. The error codes below
# are none of the form fields' own ("invalid", "max_value"): the admin's form would show its
# generic message instead of these.
MAX_ARGV = 256
MAX_OUTPUT_LIMIT = 10_000_000
MAX_COMMAND_TIMEOUT = 3600.0


def _hidden_root(path: str) -> str | None:
    """The directory a sandboxed command cannot see that holds ``path``, if one does."""
    real = os.path.realpath(path)
    for root in hidden_roots([settings.BASE_DIR]):
        for candidate in {path, real}:
            if os.path.commonpath([candidate, root]) == root:
                return root
    return None


def validate_program(value: str) -> None:
    """A command tool's program: an absolute path, or a name on ``COMMAND_PATH``, that runs.

    It must exist and be executable on this server, outside the directories a sandboxed
    command cannot see (the project, the temporary directories).
    """
    if not value or value != value.strip() or "\x00" in value:
        raise ValidationError(
            "Enter an absolute path (/usr/bin/grep) or a program name (grep), without "
            "surrounding spaces.",
            code="program",
        )
    if not os.path.isabs(value) and "/" in value:
        raise ValidationError(
            "Enter an absolute path (/usr/bin/grep) or a bare program name looked up on the "
            "PATH (grep), not a relative path.",
            code="relative",
        )
    resolved = resolve_program(value)
    if resolved is None:
        if os.path.isabs(value):
            raise ValidationError(
                "No executable file at %(path)s on this server.",
                code="missing",
                params={"path": value},
            )
        raise ValidationError(
            "No program %(name)r on the commands' PATH (%(path)s): install it or enter its "
            "absolute path.",
            code="missing",
            params={"name": value, "path": COMMAND_PATH},
        )
    root = _hidden_root(resolved)
    if root is not None:
        raise ValidationError(
            "%(path)s is inside %(root)s, which command tools cannot see: install the program "
            "elsewhere.",
            code="hidden",
            params={"path": resolved, "root": root},
        )


def validate_argv(value: Any) -> None:
    """A command tool's argument template: a JSON list of strings with bare ``{name}``s."""
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValidationError(
            'Enter a JSON list of strings, one per argument, e.g. ["-n", "{pattern}", "--", '
            '"{path}"].',
            code="not_list",
        )
    if len(value) > MAX_ARGV:
        raise ValidationError(
            "At most %(limit)d arguments.", code="too_many", params={"limit": MAX_ARGV}
        )
    for item in value:
        if "\x00" in item:
            raise ValidationError("An argument contains a NUL character.", code="nul")
        try:
            fields = list(string.Formatter().parse(item))
        except ValueError as error:
            raise ValidationError(
                "Malformed argument %(item)r: %(message)s (write {{ and }} for literal braces).",
                code="malformed",
                params={"item": item, "message": str(error)},
            ) from error
        for _literal, name, spec, conversion in fields:
            if name is not None and (not name.isidentifier() or spec or conversion):
                raise ValidationError(
                    "Placeholder {%(name)s} in %(item)r must be a bare parameter name, such as "
                    "{path}.",
                    code="placeholder",
                    params={"name": name, "item": item},
                )


def validate_argv_placeholders(value: Iterable[str], parameters: Iterable[str]) -> None:
    """Every ``{name}`` of an argument template is one of the tool's parameters."""
    known = set(parameters)
    for item in value:
        for _literal, name, _spec, _conversion in string.Formatter().parse(item):
            if name is not None and name not in known:
                raise ValidationError(
                    "Placeholder {%(name)s} is not one of the tool's parameters.",
                    code="unknown_placeholder",
                    params={"name": name},
                )


def validate_output_limit(value: int) -> None:
    """How many bytes of a command's output are kept: 1 to ``MAX_OUTPUT_LIMIT``."""
    if value is None or not 1 <= value <= MAX_OUTPUT_LIMIT:
        raise ValidationError(
            "Enter a number of bytes from 1 to %(limit)d.",
            code="output_limit",
            params={"limit": MAX_OUTPUT_LIMIT},
        )


def validate_command_timeout(value: float) -> None:
    """A command tool's timeout: at most ``MAX_COMMAND_TIMEOUT`` seconds."""
    if value is not None and value > MAX_COMMAND_TIMEOUT:
        raise ValidationError(
            "A command may run for at most %(limit)g seconds.",
            code="command_timeout",
            params={"limit": MAX_COMMAND_TIMEOUT},
        )


# Seed 004's reserved agent names: in any case, with look-alike letters and separators ignored.
_RESERVED_NAMES = frozenset(
    {"new", "all", "everyone", "user", "assistant", "system", "tool", "developer", "orkestrel"}
)
_AUTHORITY_WORDS = (
    "user",
    "admin",
    "group",
    "root",
    "sudo",
    "system",
    "developer",
    "owner",
    "operator",
    "supervisor",
    "moderator",
    "privilege",
    "authority",
)
_LOOK_ALIKES = str.maketrans(
    {
        "0": "o",
        "1": "i",
        "3": "e",
        "4": "a",
        "5": "s",
        "7": "t",
        "@": "a",
        "$": "s",
        "!": "i",
        "|": "l",
    }
)


def validate_profile_name(value: str) -> None:
    """Refuse a profile name or slug that reads as a privileged identity (seed 004)."""
    folded = "".join(ch for ch in value.casefold().translate(_LOOK_ALIKES) if ch.isalnum())
    if folded in _RESERVED_NAMES or any(word in folded for word in _AUTHORITY_WORDS):
        raise ValidationError(
            "This name reads as a privileged identity (admin, system, operator, user, …); "
            "choose another.",
            code="reserved",
        )
