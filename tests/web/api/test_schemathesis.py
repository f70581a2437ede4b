"""Schemathesis over ``/api/schema/`` in the suite: every operation, a few generated requests
each, schemathesis' default checks (configured by the repository's ``schemathesis.toml``, as
the ``schemathesis run`` command line reads it), against the app served as ``make run`` serves
it and authenticated with an API key. Any failure names the check, the request and the answer.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, settings
from schemathesis.config import SchemathesisConfig

from tests import schemathesis_hooks  # noqa: F401 - registers the JSON Lines serializer
from tests.live_app import REPO, LiveApp, live_app

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    folder: Path = tmp_path_factory.mktemp("schemathesis")
    # The fuzzer's requests are far more than a client's: no per-key budget in the way.
    with live_app(folder, API_THROTTLE_RATE="100000/min", ORKESTREL_DEMO_WORD_DELAY="0") as served:
        yield served


@pytest.fixture(scope="module")
def api_key(app: LiveApp) -> str:
    app.manage("create_user", "alice", "--password-stdin", stdin="schemathesis-Pass-4471\n")
    # Without `keys`: a fuzzed revoke could revoke this very key and leave the rest at 401.
    made = app.manage("create_api_key", "alice", "--name", "fuzz", "--scopes", "read,run")
    return made.stdout.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def api_schema(app: LiveApp, api_key: str) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(
        f"{app.url}/api/schema/?format=json",
        headers={"Authorization": f"Bearer {api_key}"},
        config=SchemathesisConfig.from_path(str(REPO / "schemathesis.toml")),
    )


schema = schemathesis.pytest.from_fixture("api_schema")


@schema.parametrize()
@settings(
    max_examples=2,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=list(HealthCheck),
)
def test_no_operation_fails_a_default_check(case, app: LiveApp, api_key: str) -> None:
    case.call_and_validate(
        base_url=app.url, headers={"Authorization": f"Bearer {api_key}"}, timeout=30
    )
