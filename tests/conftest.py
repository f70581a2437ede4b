"""Shared test configuration."""

from hypothesis import HealthCheck, settings

# CI runs on 2 cores next to PostgreSQL and Redis: keep property tests bounded and deadline-free.
settings.register_profile(
    "orkestrel",
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("orkestrel")
