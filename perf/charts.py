"""Server-rendered SVG charts for the results page: no JavaScript, no CDN, no build step.

Two kinds are enough for the issue: a line chart (tok/s or acceptance across deploys, with
the baseline as a dashed line and regressed runs in red) and a distribution strip (each
request's TTFT or TPOT as a tick, with p50/p90/p99 marked), one row per run so two runs
sit side by side. Every text is XML-escaped; the output is a complete <svg> element.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

from servebench.metrics import percentile

WIDTH, PAD_L, PAD_R, PAD_T, PAD_B = 720, 56, 16, 18, 34
COLORS = ("#2357c6", "#c2410c", "#1e7a3a", "#7c3aed")
REGRESSED_COLOR = "#b42318"


@dataclass(frozen=True)
class Point:
    label: str  # x-axis label (e.g. "v3 #12")
    value: float
    regressed: bool = False


def _fmt(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


Scale = Callable[[float], float]


def _scale(lo: float, hi: float, top: float, bottom: float) -> Scale:
    span = hi - lo or 1.0
    return lambda v: bottom - (v - lo) / span * (bottom - top)


def line_chart(
    points: Sequence[Point], *, title: str, unit: str, baseline: float | None = None
) -> str:
    height = 240
    top, bottom = PAD_T + 14, height - PAD_B
    if not points:
        return _empty(title, height)
    values = [p.value for p in points] + ([baseline] if baseline is not None else [])
    lo, hi = min(0.0, min(values)), max(values) * 1.1 or 1.0
    y = _scale(lo, hi, top, bottom)
    n = len(points)
    step = (WIDTH - PAD_L - PAD_R) / max(n - 1, 1)

    def x(i: int) -> float:
        return PAD_L + (i * step if n > 1 else (WIDTH - PAD_L - PAD_R) / 2)

    parts = [_head(title, height), _y_axis(lo, hi, y, unit, top, bottom)]
    if baseline is not None:
        parts.append(
            f'<line class="baseline" x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{y(baseline):.1f}" '
            f'y2="{y(baseline):.1f}" stroke="#5f6b7a" stroke-dasharray="5 4"/>'
            f'<text x="{WIDTH - PAD_R}" y="{y(baseline) - 4:.1f}" text-anchor="end" '
            f'font-size="11" fill="#5f6b7a">baseline {_fmt(baseline)}</text>'
        )
    path = " ".join(f"{x(i):.1f},{y(p.value):.1f}" for i, p in enumerate(points))
    parts.append(f'<polyline fill="none" stroke="{COLORS[0]}" stroke-width="2" points="{path}"/>')
    for i, p in enumerate(points):
        color = REGRESSED_COLOR if p.regressed else COLORS[0]
        parts.append(
            f'<circle cx="{x(i):.1f}" cy="{y(p.value):.1f}" r="4" fill="{color}">'
            f"<title>{escape(p.label)}: {_fmt(p.value)} {escape(unit)}</title></circle>"
        )
        if n <= 12 or i % max(1, n // 12) == 0:
            parts.append(
                f'<text x="{x(i):.1f}" y="{height - 14}" text-anchor="middle" font-size="10" '
                f'fill="#5f6b7a">{escape(p.label)}</text>'
            )
    return "".join(parts) + "</svg>"


def distribution_strips(
    rows: Sequence[tuple[str, Sequence[float]]], *, title: str, unit: str
) -> str:
    """One strip per (label, samples): every sample a tick, p50/p90/p99 as bold marks."""
    row_h = 46
    height = PAD_T + 14 + row_h * max(len(rows), 1) + PAD_B
    if not any(samples for _, samples in rows):
        return _empty(title, height)
    everything = [v for _, samples in rows for v in samples]
    lo, hi = min(everything), max(everything)
    pad = (hi - lo) * 0.05 or max(hi * 0.05, 1e-3)
    lo, hi = lo - pad, hi + pad

    def x(v: float) -> float:
        return PAD_L + (v - lo) / (hi - lo) * (WIDTH - PAD_L - PAD_R)

    parts = [_head(title, height)]
    for r, (label, samples) in enumerate(rows):
        color = COLORS[r % len(COLORS)]
        mid = PAD_T + 14 + r * row_h + row_h / 2
        parts.append(
            f'<text x="4" y="{mid + 4:.1f}" font-size="11" fill="{color}">{escape(label)}</text>'
        )
        for v in samples:
            parts.append(
                f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{mid - 9:.1f}" y2="{mid + 9:.1f}" '
                f'stroke="{color}" stroke-opacity="0.45"/>'
            )
        for p in (50, 90, 99):
            v = percentile(samples, p)
            parts.append(
                f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{mid - 15:.1f}" y2="{mid + 15:.1f}" '
                f'stroke="{color}" stroke-width="3"><title>p{p} {_fmt(v)} {escape(unit)}'
                f'</title></line><text x="{x(v):.1f}" y="{mid - 18:.1f}" font-size="9" '
                f'text-anchor="middle" fill="{color}">p{p}</text>'
            )
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        anchor = "end" if i == 4 else "middle"  # the last label stays inside the chart
        parts.append(
            f'<text x="{x(v):.1f}" y="{height - 12}" font-size="10" text-anchor="{anchor}" '
            f'fill="#5f6b7a">{_fmt(v)} {escape(unit)}</text>'
        )
    return "".join(parts) + "</svg>"


def _head(title: str, height: int) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
        f'role="img" aria-label="{escape(title)}" '
        f'class="chart"><text x="{PAD_L}" y="{PAD_T}" font-size="13" font-weight="600" '
        f'fill="#1d2330">{escape(title)}</text>'
    )


def _y_axis(lo: float, hi: float, y: Scale, unit: str, top: float, bottom: float) -> str:
    parts = [
        f'<line x1="{PAD_L}" x2="{PAD_L}" y1="{top}" y2="{bottom}" stroke="#d9dee5"/>',
        f'<line x1="{PAD_L}" x2="{WIDTH - PAD_R}" y1="{bottom}" y2="{bottom}" stroke="#d9dee5"/>',
    ]
    for i in range(5):
        v = lo + (hi - lo) * i / 4
        parts.append(
            f'<text x="{PAD_L - 6}" y="{y(v) + 4:.1f}" font-size="10" text-anchor="end" '
            f'fill="#5f6b7a">{_fmt(v)}</text>'
        )
    parts.append(f'<text x="4" y="{top - 4}" font-size="10" fill="#5f6b7a">{escape(unit)}</text>')
    return "".join(parts)


def _empty(title: str, height: int) -> str:
    return (
        _head(title, height)
        + f'<text x="{WIDTH / 2}" y="{height / 2}" text-anchor="middle" fill="#5f6b7a">'
        "no data yet</text></svg>"
    )
