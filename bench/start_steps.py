"""The report of ``bench/relay.py --start-trace``: where the app's run starts waited.

Reads the records ``bench/start_trace.py`` wrote in the server (monotonic seconds: one clock
for every process) and prints each step's quantiles. No Django: the load generator imports it.
"""

from __future__ import annotations

import json

__all__ = ["summarise"]


def _quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return f"p50 {pick(0.5):7.1f}  p90 {pick(0.9):7.1f}  p99 {pick(0.99):7.1f} ms"


def summarise(path: str) -> str:
    """Where the starts of one pass waited, as lines of quantiles."""
    with open(path) as source:
        data = json.load(source)
    records = [r for r in data["starts"] if "checked" in r and "started" in r]
    steps: dict[str, list[float]] = {
        "send -> read_submission begins": [r["read"][0] - r["send"] for r in records],
        "read_submission (wall)": [r["read"][1] - r["read"][0] for r in records],
        "read_submission (thread CPU)": [r["read"][2] for r in records],
        "read done -> start hop begins": [r["checked"][0] - r["read"][1] for r in records],
        "start hop (wall)": [r["checked"][1] - r["checked"][0] for r in records],
        "start hop (thread CPU)": [r["checked"][2] for r in records],
        "start hop done -> session build": [r["session"][0] - r["checked"][1] for r in records],
        "session build (loop)": [r["session"][1] - r["session"][0] for r in records],
        "session built -> started": [r["started"] - r["session"][1] for r in records],
        "send -> started (server side)": [r["started"] - r["send"] for r in records],
    }
    lines = [f"start trace: {len(records)} starts"]
    lines += [f"   {name:34} {_quantiles(values)}" for name, values in steps.items()]
    hops = sorted(data["hops"].items(), key=lambda item: -item[1][2])
    lines.append("sync hops of the server (all threads), by thread CPU: count, wall s, CPU s")
    lines += [
        f"   {count:7.0f} {wall:7.2f} {cpu:7.2f}  {name}" for name, (count, wall, cpu) in hops[:15]
    ]
    return "\n".join(lines)
