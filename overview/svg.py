"""Server-side SVG charts: bar, stacked bar and line, with axes, labels and a
`<title>` on every mark. Plain Python (no database, no JavaScript), so the
overview is readable without scripts, in print, and under a strict CSP: marks
carry classes (`s0`…`s7` for the series colours) and the stylesheet styles
them; no inline `style` attribute is ever written.

Every piece of text that reaches the markup (category names, series names,
titles) is user data somewhere (axis keys, usernames, case subjects) and is
escaped here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape

from django.utils.safestring import SafeString, mark_safe

WIDTH = 640
HEIGHT = 250
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 16, 44
PLOT_W = WIDTH - LEFT - RIGHT
PLOT_H = HEIGHT - TOP - BOTTOM
MAX_X_LABELS = 10
SERIES_CLASSES = 8


@dataclass(frozen=True)
class Series:
    name: str
    values: Sequence[float | None]


@dataclass(frozen=True)
class Marker:
    """A vertical rule at a category (e.g. the day a gate was passed)."""

    index: int
    label: str


@dataclass
class Chart:
    """A rendered chart and the same figures as a table (for screen readers and print)."""

    title: str
    svg: SafeString
    headers: list[str]
    rows: list[list[str]]
    legend: list[tuple[str, str]] = field(default_factory=list)  # (css class, series name)

    @property
    def empty(self) -> bool:
        return not self.rows


def _fmt(value: float | None, unit: str = "") -> str:
    if value is None:
        return "–"
    text = f"{int(value):,}" if float(value).is_integer() else f"{value:,.2f}"
    return f"{text}{unit}"


def nice_ticks(low: float, high: float, count: int = 4, integer: bool = False) -> list[float]:
    """Round tick values covering [low, high] (steps of 1, 2, 2.5 or 5 times a power of ten)."""
    if high <= low:
        high = low + 1
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = magnitude * 10
    for m in (1, 2, 2.5, 5, 10):
        if m * magnitude >= raw:
            step = m * magnitude
            break
    if integer:
        step = max(1, math.ceil(step))
    first = math.floor(low / step) * step
    last = math.ceil(high / step) * step
    n = round((last - first) / step)
    return [round(first + i * step, 10) for i in range(n + 1)]


def _y(value: float, low: float, high: float) -> float:
    return round(TOP + PLOT_H - (value - low) / (high - low) * PLOT_H, 2)


def _frame(title: str, ticks: list[float], y_unit: str, categories: Sequence[str], slot: float) -> list[str]:
    low, high = ticks[0], ticks[-1]
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(title)}</title>",
    ]
    for tick in ticks:
        y = _y(tick, low, high)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y}" y2="{y}"></line>')
        parts.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4}" text-anchor="end">{escape(_fmt(tick, y_unit))}</text>')
    parts.append(
        f'<line class="axis" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{TOP + PLOT_H}" y2="{TOP + PLOT_H}"></line>'
    )
    every = max(1, math.ceil(len(categories) / MAX_X_LABELS))
    # About 6 px a character at the tick size: longer names are cut (the full name is the title).
    limit = max(4, int(slot * every / 6.2))
    for i, name in enumerate(categories):
        if i % every:
            continue
        x = round(LEFT + slot * (i + 0.5), 2)
        lines = _tick_lines(name, limit)
        spans = "".join(
            f'<tspan x="{x}" dy="{0 if n == 0 else 13}">{escape(line)}</tspan>' for n, line in enumerate(lines)
        )
        parts.append(
            f'<text class="tick" x="{x}" y="{TOP + PLOT_H + 16}" text-anchor="middle">'
            f"<title>{escape(name)}</title>{spans}</text>"
        )
    return parts


def _tick_lines(name: str, limit: int) -> list[str]:
    """A category's label in at most two lines of `limit` characters, broken at
    spaces ("prompt injection" is two words, not "prompt injecti…"); only a
    label two lines cannot hold is cut (its full name is the title)."""
    if len(name) <= limit:
        return [name]
    first, _, rest = name.partition(" ")
    words = rest.split()
    while words and len(first) + 1 + len(words[0]) <= limit:
        first += " " + words.pop(0)
    second = " ".join(words)
    if len(first) > limit:
        first = first[: limit - 1] + "…"
    if len(second) > limit:
        second = second[: limit - 1] + "…"
    return [first, second] if second else [first]


def _table(
    categories: Sequence[str], series: Sequence[Series], unit: str, first_header: str, extra: Sequence[Series] = ()
) -> tuple[list, list]:
    headers = [first_header, *(s.name for s in series), *(s.name for s in extra)]
    rows = [
        [category, *(_fmt(s.values[i], unit) for s in series), *(_fmt(s.values[i]) for s in extra)]
        for i, category in enumerate(categories)
    ]
    return headers, rows


def _check(categories: Sequence[str], series: Sequence[Series]) -> None:
    for s in series:
        if len(s.values) != len(categories):
            raise ValueError(f"series {s.name!r} has {len(s.values)} values for {len(categories)} categories")


def stacked_bar_chart(
    *,
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    y_unit: str = "",
    first_header: str = "Day",
    extra_columns: Sequence[Series] = (),
) -> Chart:
    """One bar per category, the series stacked bottom-up in order (a single
    series is a plain bar chart). None counts as zero. `extra_columns` go into
    the table only."""
    _check(categories, [*series, *extra_columns])
    totals = [sum(s.values[i] or 0 for s in series) for i in range(len(categories))]
    ticks = nice_ticks(0, max(totals, default=0), integer=True)
    low, high = ticks[0], ticks[-1]
    slot = PLOT_W / max(1, len(categories))
    bar = round(max(1.0, slot * 0.7), 2)
    parts = _frame(title, ticks, y_unit, categories, slot)
    for i, category in enumerate(categories):
        x = round(LEFT + slot * i + (slot - bar) / 2, 2)
        base = 0.0
        for k, s in enumerate(series):
            value = s.values[i] or 0
            if value <= 0:
                continue
            y_top, y_bottom = _y(base + value, low, high), _y(base, low, high)
            parts.append(
                f'<rect class="mark s{k % SERIES_CLASSES}" x="{x}" y="{y_top}" width="{bar}" '
                f'height="{round(y_bottom - y_top, 2)}"><title>{escape(category)} · {escape(s.name)}: '
                f"{escape(_fmt(value, y_unit))}</title></rect>"
            )
            base += value
    parts.append("</svg>")
    headers, rows = _table(categories, series, y_unit, first_header, extra_columns)
    return Chart(
        title=title,
        svg=mark_safe("".join(parts)),  # noqa: S308 - every text above went through escape()
        headers=headers,
        rows=rows,
        legend=[(f"s{k % SERIES_CLASSES}", s.name) for k, s in enumerate(series)] if len(series) > 1 else [],
    )


def bar_chart(*, title: str, categories: Sequence[str], values: Sequence[float | None], name: str,
              y_unit: str = "", first_header: str = "Category") -> Chart:
    return stacked_bar_chart(
        title=title, categories=categories, series=[Series(name, values)], y_unit=y_unit, first_header=first_header
    )


def line_chart(
    *,
    title: str,
    categories: Sequence[str],
    series: Sequence[Series],
    y_unit: str = "",
    y_range: tuple[float, float] | None = None,
    markers: Sequence[Marker] = (),
    first_header: str = "Day",
    extra_columns: Sequence[Series] = (),
) -> Chart:
    """One line per series over the categories; None leaves a gap (no value that day).
    `extra_columns` go into the table only."""
    _check(categories, [*series, *extra_columns])
    present = [v for s in series for v in s.values if v is not None]
    if y_range is not None:
        low, high = y_range
        low, high = min([low, *present]), max([high, *present])
    else:
        low, high = min([0, *present]), max([0, *present])
    ticks = nice_ticks(low, high)
    low, high = ticks[0], ticks[-1]
    slot = PLOT_W / max(1, len(categories))
    parts = _frame(title, ticks, y_unit, categories, slot)
    for marker in markers:
        if 0 <= marker.index < len(categories):
            x = round(LEFT + slot * (marker.index + 0.5), 2)
            parts.append(f'<line class="marker" x1="{x}" x2="{x}" y1="{TOP}" y2="{TOP + PLOT_H}"></line>')
            parts.append(f'<text class="marker-label" x="{x + 4}" y="{TOP + 10}">{escape(marker.label)}</text>')
    for k, s in enumerate(series):
        css = f"s{k % SERIES_CLASSES}"
        segments: list[list[tuple[float, float]]] = [[]]
        for i, value in enumerate(s.values):
            if value is None:
                if segments[-1]:
                    segments.append([])
                continue
            segments[-1].append((round(LEFT + slot * (i + 0.5), 2), _y(value, low, high)))
        for segment in segments:
            if len(segment) > 1:
                points = " ".join(f"{x},{y}" for x, y in segment)
                parts.append(f'<polyline class="line {css}" points="{points}"></polyline>')
        for i, value in enumerate(s.values):
            if value is None:
                continue
            x, y = round(LEFT + slot * (i + 0.5), 2), _y(value, low, high)
            parts.append(
                f'<circle class="mark point {css}" cx="{x}" cy="{y}" r="3"><title>{escape(categories[i])} · '
                f"{escape(s.name)}: {escape(_fmt(value, y_unit))}</title></circle>"
            )
    parts.append("</svg>")
    headers, rows = _table(categories, series, y_unit, first_header, extra_columns)
    return Chart(
        title=title,
        svg=mark_safe("".join(parts)),  # noqa: S308 - every text above went through escape()
        headers=headers,
        rows=rows,
        legend=[(f"s{k % SERIES_CLASSES}", s.name) for k, s in enumerate(series)],
    )
