"""A small SVG renderer for the report: bars with intervals, lines of points, box plots.

Each chart is a string of inline SVG that needs no script, font or file from anywhere else, so
``report.html`` opens offline and makes no request. Every label goes through :func:`esc` (names
of systems and slices are untrusted input like any other text of a run), numbers are written
with fixed digits, and nothing depends on the clock: the same data gives the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

PALETTE: tuple[str, ...] = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
    "#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
)  # fmt: skip
"""Series colours, in series order (a series keeps its colour in every chart of a report)."""

WIDTH = 720
LEFT = 170
RIGHT = 24
FONT = "font-family:system-ui,sans-serif;font-size:11px"


def esc(text: object) -> str:
    """``text`` safe inside SVG or HTML text and attribute values."""
    return escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate with two decimals at most (stable bytes, small files)."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


@dataclass(frozen=True)
class Bar:
    """One bar: its series (an index into the chart's series), value and interval; ``value``
    None draws no bar and writes ``note`` (why it is null) in its place."""

    series: int
    value: float | None
    low: float | None = None
    high: float | None = None
    tip: str = ""
    note: str = ""


@dataclass(frozen=True)
class BarGroup:
    label: str
    bars: tuple[Bar, ...]


def _svg(height: float, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH}" '
        f'height="{num(height)}" viewBox="0 0 {WIDTH} {num(height)}" style="{FONT}">'
        f"<title>{esc(title)}</title>" + "".join(body) + "</svg>"
    )


def _legend(series: Sequence[str], y: float) -> list[str]:
    out = []
    x = float(LEFT)
    for i, name in enumerate(series):
        out.append(
            f'<rect x="{num(x)}" y="{num(y - 9)}" width="10" height="10" fill="{colour(i)}"/>'
            f'<text x="{num(x + 14)}" y="{num(y)}">{esc(name)}</text>'
        )
        x += 24 + 7 * len(name)
        if x > WIDTH - 120:
            x = float(LEFT)
            y += 14
    return out


def _x_axis(y: float, ticks: Sequence[float], label: str, scale: Scale) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{num(y)}" x2="{WIDTH - RIGHT}" y2="{num(y)}" stroke="#444"/>']
    for t in ticks:
        x = scale(t)
        out.append(
            f'<line x1="{num(x)}" y1="{num(y)}" x2="{num(x)}" y2="{num(y + 4)}" stroke="#444"/>'
            f'<text x="{num(x)}" y="{num(y + 15)}" text-anchor="middle">{esc(tick_label(t))}</text>'
        )
    mid = (LEFT + WIDTH - RIGHT) / 2
    out.append(f'<text x="{num(mid)}" y="{num(y + 30)}" text-anchor="middle">{esc(label)}</text>')
    return out


def tick_label(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.1f}".rstrip("0").rstrip(".")
    return f"{value:.2f}".rstrip("0").rstrip(".")


class Scale:
    """Data to pixels along x, linear or log10 (log needs a positive domain)."""

    def __init__(self, lo: float, hi: float, log: bool = False) -> None:
        self.log = log
        if log:
            lo, hi = math.log10(lo), math.log10(hi)
        if hi <= lo:
            hi = lo + 1.0
        self.lo, self.hi = lo, hi

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        v = min(max(v, self.lo), self.hi)
        return LEFT + (v - self.lo) / (self.hi - self.lo) * (WIDTH - LEFT - RIGHT)

    def ticks(self) -> list[float]:
        if self.log:
            return [10.0**e for e in range(math.floor(self.lo), math.ceil(self.hi) + 1)
                    if self.lo - 1e-9 <= e <= self.hi + 1e-9]
        step = nice_step((self.hi - self.lo) / 5)
        start = math.ceil(self.lo / step) * step
        out = []
        t = start
        while t <= self.hi + step * 1e-6:
            out.append(round(t, 10))
            t += step
        return out


def nice_step(raw: float) -> float:
    """1, 2 or 5 times a power of ten, at least ``raw``."""
    if raw <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def bar_chart(title: str, series: Sequence[str], groups: Sequence[BarGroup], x_label: str,
              domain: tuple[float, float] = (0.0, 1.0)) -> str:
    """Horizontal bars, one group per label (a slice), one bar per series, each with a
    whisker from ``low`` to ``high`` when the interval is known."""
    bar_h = 9.0
    top = 22.0 + 14 * math.ceil(len(series) / 4)
    body = _legend(series, 14.0)
    scale = Scale(*domain)
    y = top
    for group in groups:
        n = max(len(group.bars), 1)
        group_h = n * (bar_h + 2) + 8
        body.append(
            f'<text x="{LEFT - 6}" y="{num(y + group_h / 2)}" text-anchor="end">'
            f"{esc(group.label)}</text>"
        )
        for i, bar in enumerate(group.bars):
            by = y + i * (bar_h + 2)
            if bar.value is None:
                body.append(
                    f'<text x="{LEFT + 4}" y="{num(by + bar_h - 1)}" fill="#888">'
                    f"{esc(bar.note or 'null')}<title>{esc(bar.tip)}</title></text>"
                )
                continue
            w = scale(bar.value) - LEFT
            body.append(
                f'<rect x="{LEFT}" y="{num(by)}" width="{num(max(w, 0.5))}" '
                f'height="{num(bar_h)}" fill="{colour(bar.series)}" fill-opacity="0.8">'
                f"<title>{esc(bar.tip)}</title></rect>"
            )
            if bar.low is not None and bar.high is not None:
                x1, x2, cy = scale(bar.low), scale(bar.high), by + bar_h / 2
                body.append(
                    f'<path d="M{num(x1)} {num(cy)}H{num(x2)}M{num(x1)} {num(by)}V'
                    f'{num(by + bar_h)}M{num(x2)} {num(by)}V{num(by + bar_h)}" stroke="#222"/>'
                )
        y += group_h
    body += _x_axis(y + 2, scale.ticks(), x_label, scale)
    return _svg(y + 40, body, title)


@dataclass(frozen=True)
class Point:
    x: float
    y: float | None
    low: float | None = None
    high: float | None = None
    label: str = ""
    tip: str = ""


@dataclass(frozen=True)
class Line:
    series: int
    points: tuple[Point, ...]


def line_chart(title: str, series: Sequence[str], lines: Sequence[Line], x_label: str,
               y_label: str, *, x_ticks: Sequence[tuple[float, str]] | None = None,
               x_log: bool = False, y_domain: tuple[float, float] = (0.0, 1.0)) -> str:
    """Points joined per series, with vertical whiskers for intervals and a small label by each
    point (the k of a k sweep). ``x_ticks`` names categorical positions (tiers)."""
    top = 22.0 + 14 * math.ceil(len(series) / 4)
    plot_h = 220.0
    body = _legend(series, 14.0)
    xs = [p.x for ln in lines for p in ln.points if p.y is not None]
    if x_ticks:
        lo, hi = min(t[0] for t in x_ticks) - 0.3, max(t[0] for t in x_ticks) + 0.3
    elif xs:
        lo, hi = (min(xs), max(xs))
        if x_log:
            lo, hi = max(lo, 1e-3) / 1.5, max(hi, 1e-3) * 1.5
        else:
            pad = (hi - lo) * 0.08 or 1.0
            lo, hi = max(lo - pad, 0.0) if lo >= 0 else lo - pad, hi + pad
    else:
        lo, hi = 0.0, 1.0
    scale = Scale(lo, hi, log=x_log and not x_ticks)
    y0, y1 = y_domain

    def ypx(v: float) -> float:
        v = min(max(v, y0), y1)
        return top + plot_h - (v - y0) / ((y1 - y0) or 1.0) * plot_h

    step = nice_step((y1 - y0) / 5)
    t = y0
    while t <= y1 + 1e-9:
        body.append(
            f'<line x1="{LEFT}" y1="{num(ypx(t))}" x2="{WIDTH - RIGHT}" y2="{num(ypx(t))}" '
            f'stroke="#ddd"/><text x="{LEFT - 6}" y="{num(ypx(t) + 4)}" text-anchor="end">'
            f"{esc(tick_label(t))}</text>"
        )
        t = round(t + step, 10)
    body.append(
        f'<text x="14" y="{num(top + plot_h / 2)}" transform="rotate(-90 14 '
        f'{num(top + plot_h / 2)})" text-anchor="middle">{esc(y_label)}</text>'
    )
    for ln in lines:
        c = colour(ln.series)
        pts = [p for p in ln.points if p.y is not None]
        if len(pts) > 1:
            d = "M" + "L".join(f"{num(scale(p.x))} {num(ypx(p.y or 0.0))}" for p in pts)
            body.append(f'<path d="{d}" fill="none" stroke="{c}" stroke-width="1.5"/>')
        for p in pts:
            px, py = scale(p.x), ypx(p.y or 0.0)
            if p.low is not None and p.high is not None:
                body.append(
                    f'<path d="M{num(px)} {num(ypx(p.low))}V{num(ypx(p.high))}" stroke="{c}"/>'
                )
            body.append(
                f'<circle cx="{num(px)}" cy="{num(py)}" r="3.5" fill="{c}">'
                f"<title>{esc(p.tip)}</title></circle>"
            )
            if p.label:
                body.append(f'<text x="{num(px + 5)}" y="{num(py - 5)}">{esc(p.label)}</text>')
    axis = (
        _category_axis(x_ticks, top + plot_h + 2, x_label, scale)
        if x_ticks
        else _x_axis(top + plot_h + 2, scale.ticks(), x_label, scale)
    )
    body += axis
    return _svg(top + plot_h + 42, body, title)


def _category_axis(ticks: Sequence[tuple[float, str]], y: float, label: str,
                   scale: Scale) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{num(y)}" x2="{WIDTH - RIGHT}" y2="{num(y)}" stroke="#444"/>']
    for value, name in ticks:
        x = scale(value)
        out.append(f'<text x="{num(x)}" y="{num(y + 15)}" text-anchor="middle">{esc(name)}</text>')
    mid = (LEFT + WIDTH - RIGHT) / 2
    out.append(f'<text x="{num(mid)}" y="{num(y + 30)}" text-anchor="middle">{esc(label)}</text>')
    return out


@dataclass(frozen=True)
class Box:
    """One distribution: five figures (min, p25, p50, p75, max) and a marked p95."""

    series: int
    label: str
    low: float
    q1: float
    median: float
    q3: float
    high: float
    p95: float
    tip: str = ""


def box_chart(title: str, series: Sequence[str], boxes: Sequence[Box], x_label: str) -> str:
    """One horizontal box plot per row (log scale when the values span over two decades):
    whiskers to min and max, the box from p25 to p75, a bar at the median, a tick at p95."""
    top = 22.0 + 14 * math.ceil(len(series) / 4)
    body = _legend(series, 14.0)
    values = [v for b in boxes for v in (b.low, b.high) if v > 0]
    lo, hi = (min(values), max(values)) if values else (1.0, 10.0)
    log = hi / lo > 100
    scale = Scale(lo / 1.2, hi * 1.2, log=True) if log else Scale(0.0, hi * 1.05 or 1.0)
    y = top
    for b in boxes:
        c = colour(b.series)

        def x(v: float) -> float:
            return scale(max(v, lo / 1.2) if log else v)

        cy = y + 8
        body.append(
            f'<text x="{LEFT - 6}" y="{num(cy + 4)}" text-anchor="end">{esc(b.label)}</text>'
            f'<g><title>{esc(b.tip)}</title>'
            f'<path d="M{num(x(b.low))} {num(cy)}H{num(x(b.high))}" stroke="{c}"/>'
            f'<rect x="{num(x(b.q1))}" y="{num(cy - 6)}" width="{num(max(x(b.q3) - x(b.q1), 1))}"'
            f' height="12" fill="{c}" fill-opacity="0.35" stroke="{c}"/>'
            f'<path d="M{num(x(b.median))} {num(cy - 6)}V{num(cy + 6)}" stroke="#000" '
            f'stroke-width="2"/><path d="M{num(x(b.p95))} {num(cy - 4)}V{num(cy + 4)}" '
            f'stroke="{c}" stroke-width="2"/></g>'
        )
        y += 20
    body += _x_axis(y + 2, scale.ticks(), x_label + (" (log scale)" if log else ""), scale)
    return _svg(y + 40, body, title)
