"""axe-core in the page under test: the accessibility violations a person would run into.

The vendored build (``vendor/axe-core``) is evaluated through the browser's debugging
protocol, which the page's Content-Security-Policy does not govern: the site serves no test
code, and a strict policy needs no exception for it.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any, TypedDict

AXE = Path(__file__).resolve().parent / "vendor" / "axe-core" / "axe.min.js"
# Violations that block people: axe's two highest impacts.
BLOCKING = ("serious", "critical")

RUN = """
async (impacts) => {
  const results = await window.axe.run(document, { resultTypes: ["violations"] });
  return results.violations
    .filter((violation) => impacts.includes(violation.impact))
    .map((violation) => ({
      id: violation.id,
      impact: violation.impact,
      help: violation.help,
      targets: violation.nodes.map((node) => node.target.join(" ")),
    }));
}
"""


class Violation(TypedDict):
    """One failed axe rule and where it failed."""

    id: str
    impact: str
    help: str
    targets: list[str]


@cache
def _source() -> str:
    return AXE.read_text(encoding="utf-8")


def axe_violations(page: Any, impacts: tuple[str, ...] = BLOCKING) -> list[Violation]:
    """The page's axe violations of the given impacts (serious and critical by default)."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(_source())
    return page.evaluate(RUN, list(impacts))
