"""The report of ``bench/relay.py --start-trace``: where the app's run starts waited.

Reads the records ``bench/start_trace.py`` wrote in the server (monotonic seconds: one clock
for every process) and prints each step's quantiles. No Django: the load generator imports it.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["summarise"]


def _quantiles(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return f"p50 {pick(0.5):7.1f}  p90 {pick(0.9):7.1f}  p99 {pick(0.99):7.1f} ms"


def _steps(records: list[dict[str, Any]]) -> dict[str, list[float]]:
    """Each step's durations; a REST start (one with ``view``) has its own steps around them."""
    steps: dict[str, list[float]] = {}

    def step(name: str, values: list[float]) -> None:
        steps[name] = values

    rest = bool(records) and "view" in records[0]
    if rest:
        step("arrival -> the view begins", [r["view"][0] - r["send"] for r in records])
        step("the view (wall)", [r["view"][1] - r["view"][0] for r in records])
        step("the view (thread CPU)", [r["view"][2] for r in records])
    # The double-submit read is a hop of its own, or (since 6ee28ad) inside the view's hop
    # (REST) or the start's (a plain message over the websocket).
    host = "view" if rest else "checked"
    inside = all(r[host][0] <= r["read"][0] <= r["read"][1] <= r[host][1] for r in records)
    where = f" (in the {'view' if rest else 'start'}'s hop)" if inside else ""
    after = (lambda r: r["view"][1]) if rest else (lambda r: r["send"])
    if not inside:
        step(
            "view done -> read begins" if rest else "send -> read_submission begins",
            [r["read"][0] - after(r) for r in records],
        )
    step(f"read_submission (wall){where}", [r["read"][1] - r["read"][0] for r in records])
    step(f"read_submission (thread CPU){where}", [r["read"][2] for r in records])
    if inside:
        step(
            "view done -> start hop begins" if rest else "send -> start hop begins",
            [r["checked"][0] - after(r) for r in records],
        )
    else:
        step("read done -> start hop begins", [r["checked"][0] - r["read"][1] for r in records])
    step("start hop (wall)", [r["checked"][1] - r["checked"][0] for r in records])
    step("start hop (thread CPU)", [r["checked"][2] for r in records])
    step("start hop done -> session build", [r["session"][0] - r["checked"][1] for r in records])
    step("session build (loop)", [r["session"][1] - r["session"][0] for r in records])
    step("session built -> started", [r["started"] - r["session"][1] for r in records])
    if rest:
        step("started -> the answer begins", [r["respond"][0] - r["started"] for r in records])
        step("the answer (wall)", [r["respond"][1] - r["respond"][0] for r in records])
        step("answer done -> headers sent", [r["headers"] - r["respond"][1] for r in records])
        step("headers -> first body chunk", [r["body"] - r["headers"] for r in records])
        step("arrival -> first body chunk", [r["body"] - r["send"] for r in records])
    else:
        step("send -> started (server side)", [r["started"] - r["send"] for r in records])
    return steps


def summarise(path: str) -> str:
    """Where the starts of one pass waited, as lines of quantiles."""
    with open(path) as source:
        data = json.load(source)
    needed = ("checked", "started", "session", "read")
    records = [r for r in data["starts"] if all(key in r for key in needed)]
    rest = [r for r in records if all(key in r for key in ("view", "respond", "headers", "body"))]
    lines = [f"start trace: {len(records)} starts ({len(rest)} over REST)"]
    for kind in (rest, [r for r in records if "view" not in r]):
        if kind:
            lines += [f"   {name:34} {_quantiles(v)}" for name, v in _steps(kind).items()]
    hops = sorted(data["hops"].items(), key=lambda item: -item[1][2])
    lines.append("sync hops of the server (all threads), by thread CPU: count, wall s, CPU s")
    lines += [
        f"   {count:7.0f} {wall:7.2f} {cpu:7.2f}  {name}" for name, (count, wall, cpu) in hops[:15]
    ]
    return "\n".join(lines)
