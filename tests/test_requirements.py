"""The pins the dependency audit found behind stay brought up (issue 17, finding 21): among
them the HTML sanitizer ``nh3``, which every rendered answer goes through."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

from packaging.version import Version

REQUIREMENTS = Path(__file__).resolve().parents[1] / "requirements.txt"
# The versions the audit brought these direct requirements to (they were 0.3.2, 4.25.1,
# 4.0.0, 3.0.1 and 3.2.12).
FLOORS = {
    "nh3": "0.3.8",
    "jsonschema": "4.26.0",
    "markdown-it-py": "4.3.0",
    "dj-database-url": "3.1.2",
    "psycopg": "3.3.9",
}


def _pins() -> dict[str, str]:
    """``name==version`` lines of requirements.txt (extras dropped), by lower-case name."""
    pins = {}
    for line in REQUIREMENTS.read_text().splitlines():
        found = re.match(r"^([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?==([^\s#;]+)", line.strip())
        if found:
            pins[found[1].lower()] = found[2]
    return pins


def test_the_pins_the_audit_brought_up_to_date_stay_at_least_there():
    pins = _pins()
    behind = {
        name: pins.get(name)
        for name, floor in FLOORS.items()
        if name not in pins or Version(pins[name]) < Version(floor)
    }
    assert behind == {}, f"pinned below the audited versions {FLOORS}"


def test_the_installed_sanitizer_is_the_pinned_one():
    assert version("nh3") == _pins()["nh3"]
