"""Chart specifications for the results pages: plain JSON that `static/js/perf-charts.js`
draws with Chart.js (vendored, docs/dependencies.md), and the same figures as a table
that the page shows beside each chart (read without script, and by a screen reader).

Charts (templates/perf/_chart.html includes one):
- `throughput_vs_ttft`: output tokens/s against TTFT p50, one line per run through its
  concurrency levels, the reference dashed, the Pareto front (no other point has both a
  lower TTFT and a higher tok/s) marked;
- `throughput_vs_concurrency`: output tokens/s per concurrency level, the same marks;
- `across_deploys`: one figure per run in time order, the baseline as a dashed line,
  regressed runs in red;
- `percentiles`: p50/p90/p99 of TTFT or TPOT per run, as bars (the old strip's "p50",
  "p90" and "p99" labels collided where the values were close).
Every label is text for Chart.js (drawn on a canvas, never parsed as HTML); the page puts
the spec into a `json_script` element.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perf.comparison import ComparedRun
from servebench.metrics import percentile
from servebench.names import metric_label, metric_name, metric_unit, streams

PALETTE = ("#2357c6", "#c2410c", "#1e7a3a", "#7c3aed", "#0e7490", "#a16207", "#be185d", "#4b5563")
REFERENCE_COLOR = "#1d2330"
PARETO_COLOR = "#b45309"
REGRESSED_COLOR = "#b42318"


@dataclass(frozen=True)
class Chart:
    """What templates/perf/_chart.html renders: the canvas's spec and the table beside."""

    id: str
    title: str
    spec: dict[str, Any]
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)

    @property
    def data_id(self) -> str:
        return f"{self.id}-data"

    @property
    def empty(self) -> bool:
        return not any(s["points"] for s in self.spec.get("series", []))


def fmt(value: float | None) -> str:
    """A figure as tables show it: 3 significant digits or whole numbers, "—" for none."""
    if value is None:
        return "—"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:.1f}"
    return f"{value:.2f}"


def pareto_front(points: Sequence[tuple[float, float]]) -> list[int]:
    """Indexes of the points on the front: no other point has a lower-or-equal x (TTFT)
    and a higher-or-equal y (tok/s) with one of them strictly better. In x order."""
    front = []
    for i, (x, y) in enumerate(points):
        beaten = any(
            (ox <= x and oy >= y) and (ox < x or oy > y)
            for j, (ox, oy) in enumerate(points)
            if j != i
        )
        if not beaten:
            front.append(i)
    return sorted(front, key=lambda i: points[i])


def _color(index: int, item: ComparedRun) -> str:
    return REFERENCE_COLOR if item.is_reference else PALETTE[index % len(PALETTE)]


def _series(item: ComparedRun, index: int, points: list[dict[str, Any]]) -> dict[str, Any]:
    label = item.label + (" (reference)" if item.is_reference else "")
    return {
        "label": label,
        "points": points,
        "color": _color(index, item),
        "reference": item.is_reference,
    }


def _front_series(all_points: list[dict[str, Any]], front: list[int], x_key: str) -> dict[str, Any]:
    return {
        "label": "Pareto front",
        "points": [{**all_points[i], "x": all_points[i][x_key]} for i in front],
        "color": PARETO_COLOR,
        "pareto": True,
        "line": x_key == "ttft",  # the front as a line where it is one: against TTFT
    }


def _level_points(compared: Sequence[ComparedRun]) -> list[list[dict[str, Any]]]:
    """Per run, one point per level with TTFT p50 and tok/s (levels lacking either left out)."""
    out = []
    for item in compared:
        pts = []
        for lv in item.levels:
            ttft, tok = lv.figures.get("ttft_p50_ms"), lv.figures.get("output_tok_s")
            if ttft is None or tok is None:
                continue
            pts.append(
                {
                    "x": round(ttft, 3),
                    "y": round(tok, 3),
                    "ttft": round(ttft, 3),
                    "concurrency": lv.concurrency,
                    "note": f"{item.label}, {streams(lv.concurrency)}",
                }
            )
        out.append(pts)
    return out


def _front_indexes(per_run: list[list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[int]]:
    flat = [p for pts in per_run for p in pts]
    return flat, pareto_front([(p["ttft"], p["y"]) for p in flat])


def _table(
    per_run: list[list[dict[str, Any]]], compared: Sequence[ComparedRun], front: set[int]
) -> tuple[list[str], list[list[str]]]:
    rows, n = [], 0
    for item, pts in zip(compared, per_run, strict=True):
        for p in pts:
            rows.append(
                [
                    item.label + (" (reference)" if item.is_reference else ""),
                    streams(p["concurrency"]),
                    fmt(p["ttft"]),
                    fmt(p["y"]),
                    "yes" if n in front else "",
                ]
            )
            n += 1
    columns = [
        "Run",
        "Streams",
        metric_label("ttft_p50_ms"),
        metric_label("output_tok_s"),
        "Pareto front",
    ]
    return columns, rows


def throughput_vs_ttft(compared: Sequence[ComparedRun], chart_id: str = "chart-ttft") -> Chart:
    per_run = _level_points(compared)
    flat, front = _front_indexes(per_run)
    series = [
        _series(item, i, pts) for i, (item, pts) in enumerate(zip(compared, per_run, strict=True))
    ]
    if flat:
        series.append(_front_series(flat, front, "ttft"))
    columns, rows = _table(per_run, compared, set(front))
    title = "Output tokens/s against TTFT p50, one line per run through its concurrency levels"
    spec = {
        "kind": "scatter",
        "x": {"title": metric_label("ttft_p50_ms"), "type": "linear", "unit": "ms"},
        "y": {"title": metric_label("output_tok_s"), "begin_at_zero": True, "unit": "tok/s"},
        "series": series,
    }
    return Chart(chart_id, title, spec, columns, rows)


def throughput_vs_concurrency(
    compared: Sequence[ComparedRun], chart_id: str = "chart-concurrency"
) -> Chart:
    per_run = _level_points(compared)
    flat, front = _front_indexes(per_run)
    levels = sorted({p["concurrency"] for p in flat if p["concurrency"] is not None})
    series = []
    for i, (item, pts) in enumerate(zip(compared, per_run, strict=True)):
        moved = [{**p, "x": p["concurrency"]} for p in pts if p["concurrency"] is not None]
        series.append(_series(item, i, moved))
    if flat:
        series.append(_front_series(flat, front, "concurrency"))
    columns, rows = _table(per_run, compared, set(front))
    spec = {
        "kind": "scatter",
        "x": {
            "title": "Concurrent streams",
            "type": "logarithmic" if len(levels) > 2 and levels[-1] / levels[0] >= 8 else "linear",
            "ticks": levels,
            "unit": "streams",
        },
        "y": {"title": metric_label("output_tok_s"), "begin_at_zero": True, "unit": "tok/s"},
        "series": series,
    }
    return Chart(chart_id, "Output tokens/s per concurrency level", spec, columns, rows)


@dataclass(frozen=True)
class Point:
    label: str  # the x-axis label, e.g. "v3 #12"
    value: float
    regressed: bool = False


def across_deploys(
    points: Sequence[Point], *, chart_id: str, title: str, metric: str, baseline: float | None
) -> Chart:
    """One point per run in time order; the baseline as a dashed line; regressed in red."""
    labels = [p.label for p in points]
    series: list[dict[str, Any]] = [
        {
            "label": metric_name(metric),
            "points": [
                {"x": p.label, "y": round(p.value, 3), "note": "regressed" if p.regressed else ""}
                for p in points
            ],
            "color": PALETTE[0],
            "point_colors": [REGRESSED_COLOR if p.regressed else PALETTE[0] for p in points],
        }
    ]
    if baseline is not None and points:
        series.append(
            {
                "label": f"Baseline {fmt(baseline)} {metric_unit(metric)}",
                "points": [{"x": label, "y": round(baseline, 3)} for label in labels],
                "color": REFERENCE_COLOR,
                "reference": True,
                "no_points": True,
            }
        )
    spec = {
        "kind": "line",
        "x": {"title": "Run (oldest first)", "type": "category", "labels": labels},
        "y": {"title": metric_label(metric), "begin_at_zero": True, "unit": metric_unit(metric)},
        "series": series,
    }
    rows = [[p.label, fmt(p.value), "regressed" if p.regressed else ""] for p in points]
    return Chart(chart_id, title, spec, ["Run", metric_label(metric), "Gate"], rows)


def percentiles(
    runs: Sequence[tuple[str, Sequence[float]]], *, chart_id: str, metric: str, title: str
) -> Chart:
    """p50, p90 and p99 of each run's per-request samples (ms) as grouped bars."""
    marks = (50, 90, 99)
    labels = [f"p{m}" for m in marks]
    series, rows = [], []
    for i, (label, samples) in enumerate(runs):
        values = [percentile(list(samples), m) if samples else None for m in marks]
        series.append(
            {
                "label": label,
                "points": [
                    {"x": name, "y": round(v, 3) if v is not None else None}
                    for name, v in zip(labels, values, strict=True)
                ],
                "color": PALETTE[i % len(PALETTE)],
            }
        )
        rows.append([label, *(fmt(v) for v in values), str(len(samples))])
    spec = {
        "kind": "bar",
        "x": {"title": "Percentile of the requests", "type": "category", "labels": labels},
        "y": {"title": f"{metric} (ms)", "begin_at_zero": True, "unit": "ms"},
        "series": series,
    }
    return Chart(chart_id, title, spec, ["Run", *labels, "Requests"], rows)


__all__ = [
    "Chart",
    "Point",
    "across_deploys",
    "fmt",
    "pareto_front",
    "percentiles",
    "throughput_vs_concurrency",
    "throughput_vs_ttft",
]
