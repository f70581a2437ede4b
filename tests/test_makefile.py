"""The Makefile's hardening targets (issue 17): ``make run`` makes the checkout's secret key
before it serves (finding 10), and ``make audit`` reports known vulnerabilities, or says
plainly that it could not check (finding 21).

Each test runs ``make`` in a scratch folder holding the Makefile, the requirements and a
stand-in virtualenv, so nothing is installed or served. The stand-in ``pip-audit`` replays
what the real one prints (the vulnerability database is on the network, out of the tests'
reach); the Makefile's reading of it is what is tested.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
# What pip-audit prints on stderr when it cannot reach its vulnerability service.
OFFLINE = (
    "requests.exceptions.ConnectionError: HTTPSConnectionPool(host='pypi.org', port=443): "
    "Max retries exceeded with url: /pypi/nh3/0.3.2/json"
)


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A folder with the Makefile, the requirements and an up-to-date stand-in virtualenv
    (``make`` is there: the suite itself runs through ``make test``)."""
    for name in ("Makefile", "requirements.txt", "requirements-dev.txt"):
        shutil.copy(REPO / name, tmp_path / name)
    venv = tmp_path / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(sys.executable)
    # Newer than the requirements, in the order the Makefile builds them: nothing to install.
    for stamp in (".created", ".runtime", ".dev"):
        (venv / stamp).touch()
    return tmp_path


def _make(folder: Path, target: str, *options: str) -> subprocess.CompletedProcess[str]:
    env = {name: value for name, value in os.environ.items() if name != "SECRET_KEY"}
    return subprocess.run(
        ["make", "-s", *options, target],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _pip_audit(folder: Path, *, stdout: str = "", stderr: str = "", code: int = 0) -> None:
    """Install a stand-in ``pip-audit`` that prints ``stdout`` and ``stderr`` and exits."""
    script = folder / ".venv" / "bin" / "pip-audit"
    script.write_text(
        f"#!{sys.executable}\nimport sys\n"
        f"sys.stdout.write({stdout!r})\nsys.stderr.write({stderr!r})\nsys.exit({code})\n"
    )
    script.chmod(0o755)


def _report(*dependencies: dict[str, object]) -> str:
    return json.dumps({"dependencies": list(dependencies), "fixes": []})


def test_make_run_writes_the_secret_key_before_it_migrates_and_serves(checkout):
    done = _make(checkout, "run", "-n")  # what it would run, in order

    assert done.returncode == 0, done.stderr
    steps = done.stdout
    assert "secrets.token_urlsafe" in steps and "manage.py migrate" in steps
    assert steps.index("secrets.token_urlsafe") < steps.index("manage.py migrate")
    assert steps.index("manage.py migrate") < steps.index("-m orkestrel.server")


def test_make_audit_says_plainly_when_it_cannot_reach_the_database(checkout):
    _pip_audit(checkout, stderr=f"Traceback (most recent call last):\n{OFFLINE}\n", code=1)

    done = _make(checkout, "audit")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "audit: not done, no access to the vulnerability database: requests.exceptions."
    )
    assert "Traceback" not in done.stdout + done.stderr


def test_make_audit_says_so_when_the_database_knows_none_of_the_packages(checkout):
    unknown = "Dependency not found on PyPI and could not be audited: nh3 (0.3.8)"
    _pip_audit(checkout, stdout=_report({"name": "nh3", "skip_reason": unknown}), code=0)

    done = _make(checkout, "audit")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "audit: not done, the vulnerability database knows none of the 1 installed packages "
        "(no access to it from here)"
    )


def test_make_audit_fails_naming_each_known_vulnerability_and_its_fix(checkout):
    found = _report(
        {
            "name": "nh3",
            "version": "0.3.2",
            "vulns": [{"id": "GHSA-test-0001", "fix_versions": ["0.3.8"]}],
        },
        {"name": "httpx", "version": "0.28.1", "vulns": []},
    )
    _pip_audit(checkout, stdout=found, code=1)

    done = _make(checkout, "audit")

    assert done.returncode != 0
    assert done.stdout.splitlines() == [
        "nh3 0.3.2: GHSA-test-0001 (fixed in 0.3.8)",
        "audit: 2 packages checked, 1 with known vulnerabilities",
    ]


def test_make_audit_passes_when_nothing_is_known_vulnerable(checkout):
    _pip_audit(checkout, stdout=_report({"name": "nh3", "version": "0.3.8", "vulns": []}))

    done = _make(checkout, "audit")

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "audit: 1 packages checked, 0 with known vulnerabilities"


def test_a_failing_pip_audit_fails_the_audit_with_its_reason(checkout):
    _pip_audit(checkout, stderr="ERROR: invalid requirement: 'nh3=='\n", code=2)

    done = _make(checkout, "audit")

    assert done.returncode != 0
    assert done.stdout.strip() == (
        "audit: not done, pip-audit failed: ERROR: invalid requirement: 'nh3=='"
    )
