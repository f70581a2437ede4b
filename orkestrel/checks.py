"""Django's security checks that find its middleware by dotted path, run for ours as well.

``orkestrel.middleware`` holds Django's security, session, CSRF, clickjacking and CSP
middleware with their hooks on the event loop. Django's checks look for the originals' paths in
``MIDDLEWARE``: not finding them, they would warn that they are missing (``security.W001``,
``W002``, ``W003``; ``W010`` and ``W013`` for the session cookie: all silenced in settings for
that reason) and skip every check that depends on them (HSTS, the HTTPS redirect, the CSRF
cookie, the CSP nonce...). The two checks below run Django's security checks again with our
paths read as Django's and report what only that run finds, and what it finds under a silenced
id as ``orkestrel.<id>`` (a middleware missing under both names).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Tags, register
from django.core.checks.registry import registry
from django.test.utils import override_settings

__all__ = ["AS_DJANGO", "SILENCED", "deployment_checks", "security_checks"]

# Ours, and the Django class each stands for.
AS_DJANGO = {
    "orkestrel.middleware.SecurityMiddleware": "django.middleware.security.SecurityMiddleware",
    "orkestrel.middleware.SessionMiddleware": (
        "django.contrib.sessions.middleware.SessionMiddleware"
    ),
    "orkestrel.middleware.CsrfViewMiddleware": "django.middleware.csrf.CsrfViewMiddleware",
    "orkestrel.middleware.XFrameOptionsMiddleware": (
        "django.middleware.clickjacking.XFrameOptionsMiddleware"
    ),
    "orkestrel.middleware.ContentSecurityPolicyMiddleware": (
        "django.middleware.csp.ContentSecurityPolicyMiddleware"
    ),
}

# What Django says when it finds none of its paths (``SILENCED_SYSTEM_CHECKS`` in settings).
SILENCED = frozenset(
    {"security.W001", "security.W002", "security.W003", "security.W010", "security.W013"}
)

Check = Callable[..., Iterable[CheckMessage]]


def _django_security_checks(deploy: bool) -> list[Check]:
    every = set(registry.get_checks(include_deployment_checks=True))
    plain = set(registry.get_checks(include_deployment_checks=False))
    chosen = every - plain if deploy else plain
    return [
        check
        for check in chosen
        if Tags.security in getattr(check, "tags", ())
        and getattr(check, "__module__", "").startswith("django.")
    ]


def _run(
    checks: Sequence[Check], app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[CheckMessage]:
    return [message for check in checks for message in check(app_configs=app_configs, **kwargs)]


def _ours_as_django(
    deploy: bool, app_configs: Sequence[AppConfig] | None, **kwargs: Any
) -> list[CheckMessage]:
    if not any(path in AS_DJANGO for path in settings.MIDDLEWARE):
        return []
    checks = sorted(_django_security_checks(deploy), key=lambda check: check.__qualname__)
    as_found = _run(checks, app_configs, **kwargs)
    with override_settings(MIDDLEWARE=[AS_DJANGO.get(path, path) for path in settings.MIDDLEWARE]):
        as_django = _run(checks, app_configs, **kwargs)
    found = []
    for message in as_django:
        if message.id in SILENCED:
            found.append(
                CheckMessage(
                    message.level,
                    message.msg,
                    hint=message.hint,
                    obj=message.obj,
                    id=f"orkestrel.{message.id}",
                )
            )
        elif message not in as_found:
            found.append(message)
    return found


@register(Tags.security)
def security_checks(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Django's security checks, with our middleware read as Django's."""
    return _ours_as_django(False, app_configs, **kwargs)


@register(Tags.security, deploy=True)
def deployment_checks(
    app_configs: Sequence[AppConfig] | None = None, **kwargs: Any
) -> list[CheckMessage]:
    """Django's deployment security checks, with our middleware read as Django's."""
    return _ours_as_django(True, app_configs, **kwargs)
