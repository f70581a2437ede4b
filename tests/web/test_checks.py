"""Django's security checks find our on-the-loop middleware as they would find Django's."""

from __future__ import annotations

from django.conf import settings
from django.core.checks import Tags, run_checks
from django.test import override_settings

from orkestrel.checks import AS_DJANGO


def _ids(**overrides: object) -> set[str]:
    with override_settings(**overrides):
        found = run_checks(tags=[Tags.security], include_deployment_checks=True)
    return {message.id for message in found if message.id and not message.is_silenced()}


def test_the_deployment_checks_that_need_the_middleware_run_for_ours():
    assert set(settings.MIDDLEWARE) >= set(AS_DJANGO)
    found = _ids(DEBUG=False, SECURE_HSTS_SECONDS=0, SECURE_SSL_REDIRECT=False)
    # HSTS and the HTTPS redirect (security middleware), the CSRF and session cookies.
    assert {"security.W004", "security.W008", "security.W012", "security.W016"} <= found
    assert not found & {"security.W001", "security.W002", "security.W003", "security.W010"}


def test_an_https_deployment_passes_them():
    found = _ids(
        DEBUG=False,
        SECURE_HSTS_SECONDS=31536000,
        SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
        SECURE_HSTS_PRELOAD=True,
        SECURE_SSL_REDIRECT=True,
        SESSION_COOKIE_SECURE=True,
        CSRF_COOKIE_SECURE=True,
    )
    assert not {check for check in found if check.startswith(("security.", "orkestrel."))} - {
        "security.W009"  # the test settings' key is known to be a test key
    }


def test_a_stack_without_the_security_middleware_is_named():
    stack = [path for path in settings.MIDDLEWARE if not path.endswith(".SecurityMiddleware")]
    found = _ids(MIDDLEWARE=stack, DEBUG=False, SECURE_HSTS_SECONDS=0)
    assert "orkestrel.security.W001" in found
    # Without it, the checks that depend on it say nothing, as Django's do.
    assert "security.W004" not in found
