"""A bar chart as inline SVG, drawn on the server: no script, no inline style, no CDN.

Presentation is in attributes and classes (``static/orkestrel/admin/usage.css`` colours them),
which a strict ``Content-Security-Policy`` allows; each bar has a ``<title>`` (its tooltip), the
chart an accessible name, and the page shows the same figures in a table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

__all__ = ["Bar", "bar_chart"]

WIDTH = 640
HEIGHT = 160
# Room for the axis' labels: the top value on the left, the first and last day below.
LEFT = 56
BOTTOM = 20
TOP = 8


@dataclass(frozen=True, slots=True)
class Bar:
    """One bar: its label (a day), its value, and the value as people read it."""

    label: str
    value: float
    text: str


def _number(value: float) -> str:
    if value >= 1_000_000:
        return f"{value / 1_000_000:.1f}M"
    if value >= 1_000:
        return f"{value / 1_000:.1f}k"
    if value and value < 1:
        return f"{Decimal(str(value)).normalize():f}"[:8]
    return f"{value:g}"


def bar_chart(name: str, bars: Sequence[Bar], css: str) -> SafeString:
    """An SVG bar chart of ``bars`` called ``name``; ``css`` names its colour's class."""
    top = max((bar.value for bar in bars), default=0.0) or 1.0
    plot_w, plot_h = WIDTH - LEFT, HEIGHT - BOTTOM - TOP
    step = plot_w / max(1, len(bars))
    width = max(1.0, step * 0.8)
    rects = format_html_join(
        "",
        '<rect class="bar {}" x="{}" y="{}" width="{}" height="{}"><title>{}: {}</title></rect>',
        (
            (
                css,
                f"{LEFT + i * step + (step - width) / 2:.1f}",
                f"{TOP + plot_h - plot_h * bar.value / top:.1f}",
                f"{width:.1f}",
                f"{plot_h * bar.value / top:.1f}",
                bar.label,
                bar.text,
            )
            for i, bar in enumerate(bars)
        ),
    )
    first = bars[0].label if bars else ""
    last = bars[-1].label if bars else ""
    return format_html(
        '<svg class="usage-chart" role="img" aria-label="{name}" viewBox="0 0 {w} {h}" '
        'width="100%" preserveAspectRatio="none" xmlns="http://www.w3.org/2000/svg">'
        "<title>{name}</title>"
        '<line class="axis" x1="{left}" y1="{base}" x2="{w}" y2="{base}"></line>'
        '<line class="axis" x1="{left}" y1="{top}" x2="{left}" y2="{base}"></line>'
        '<text class="tick" x="{tx}" y="{ty}" text-anchor="end">{peak}</text>'
        '<text class="tick" x="{tx}" y="{base}" text-anchor="end">0</text>'
        "{rects}"
        '<text class="tick" x="{left}" y="{h}">{first}</text>'
        '<text class="tick" x="{w}" y="{h}" text-anchor="end">{last}</text>'
        "</svg>",
        name=name,
        w=WIDTH,
        h=HEIGHT - 4,
        left=LEFT,
        top=TOP,
        base=TOP + plot_h,
        tx=LEFT - 4,
        ty=TOP + 10,
        peak=_number(top) if any(bar.value for bar in bars) else "0",
        rects=rects,
        first=first,
        last=last,
    )
