"""Runs compared with a reference: per concurrency level the figures a person compares
(median over repeats), the change against the reference, the gate's verdict and how sure
it is, in words. The results pages, the exports and a trial's page read these; nothing
here writes (the verdict is computed, not stored).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from perf.models import BenchRun
from servebench.gate import GateResult, gate, headline, verdict_certainty
from servebench.names import metric_label
from servebench.schema import BenchResult, LevelResult

# The figures of one level, in the order tables and exports show them.
FIGURES: tuple[str, ...] = (
    "output_tok_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "acceptance_rate",
    "acceptance_length",
)


@dataclass(frozen=True)
class LevelFigures:
    """One concurrency level of a run, each figure the median over its repeats."""

    concurrency: int | None
    repeats: int
    figures: dict[str, float | None]
    # Speculative decoding: the acceptance rate at each draft position (0-1, median over
    # repeats); empty without a speculative config.
    per_position: tuple[float, ...] = ()


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def _read(level: LevelResult) -> dict[str, float | None]:
    spec = level.spec_decode
    return {
        "output_tok_s": level.output_throughput,
        "ttft_p50_ms": level.ttft_ms.median,
        "ttft_p99_ms": level.ttft_ms.p99,
        "tpot_p50_ms": level.tpot_ms.median,
        "tpot_p99_ms": level.tpot_ms.p99,
        "acceptance_rate": spec.acceptance_rate if spec else None,
        "acceptance_length": spec.acceptance_length if spec else None,
    }


def level_figures(result: BenchResult) -> list[LevelFigures]:
    """Per concurrency level (as measured, lowest first), the medians of its repeats."""
    rows = []
    for concurrency in sorted(result.concurrencies, key=lambda c: (c is None, c or 0)):
        repeats = [lv for lv in result.repeats_of(concurrency) if lv.completed]
        if not repeats:
            continue
        read = [_read(lv) for lv in repeats]
        rows.append(
            LevelFigures(
                concurrency=concurrency,
                repeats=len(repeats),
                figures={name: _median([r[name] for r in read]) for name in FIGURES},
                per_position=_per_position(repeats),
            )
        )
    return rows


def _per_position(repeats: Sequence[LevelResult]) -> tuple[float, ...]:
    """Per draft position, the median over the repeats that report it."""
    rates = [lv.spec_decode.per_position_acceptance_rates for lv in repeats if lv.spec_decode]
    width = max((len(r) for r in rates), default=0)
    return tuple(statistics.median([r[pos] for r in rates if len(r) > pos]) for pos in range(width))


def run_label(run: BenchRun) -> str:
    """ "profile v3 #12": what a legend, a table row and an export name a run by."""
    version = f" v{run.profile_version.number}" if run.profile_version else ""
    return f"{run.profile.name}{version} #{run.pk}"


@dataclass
class ComparedRun:
    """A run beside the reference: its levels, the change of each figure against the
    reference's at the same level (percent, signed as the figure moved), and the gate's
    verdict with its headline and certainty in words (None for the reference itself, or
    when the runs share no level)."""

    run: BenchRun
    label: str
    levels: list[LevelFigures]
    is_reference: bool = False
    verdict: GateResult | None = None
    headline: str = ""
    certainty: str = ""
    changes: dict[tuple[int | None, str], float] = field(default_factory=dict)

    def change(self, concurrency: int | None, figure: str) -> float | None:
        return self.changes.get((concurrency, figure))


def _changes(levels: list[LevelFigures], ref: list[LevelFigures]) -> dict[Any, float]:
    by_level = {lv.concurrency: lv for lv in ref}
    out = {}
    for lv in levels:
        base = by_level.get(lv.concurrency)
        if base is None:
            continue
        for name in FIGURES:
            mine, theirs = lv.figures.get(name), base.figures.get(name)
            if mine is not None and theirs:
                out[(lv.concurrency, name)] = (mine - theirs) / theirs * 100
    return out


def compare_runs(
    runs: Sequence[BenchRun], reference: BenchRun | None, threshold_pct: float, *, name: str = ""
) -> list[ComparedRun]:
    """Each of `runs` against `reference` (the baseline, production …; `name` is how the
    headline calls it, "the reference" by default). The reference comes first."""
    ordered = ([reference] if reference else []) + [
        r for r in runs if reference is None or r.pk != reference.pk
    ]
    ref_result = BenchResult.from_dict(reference.result) if reference else None
    ref_levels = level_figures(ref_result) if ref_result else []
    compared = []
    for run in ordered:
        result = BenchResult.from_dict(run.result)
        item = ComparedRun(run, run_label(run), level_figures(result))
        if reference is not None and run.pk == reference.pk:
            item.is_reference = True
        elif ref_result is not None:
            item.changes = _changes(item.levels, ref_levels)
            try:
                item.verdict = gate(ref_result, result, threshold_pct)
            except ValueError as exc:  # no shared level, or nothing completed
                item.headline = f"not compared: {exc}"
            else:
                item.headline = headline(item.verdict, name or "the reference")
                item.certainty = verdict_certainty(item.verdict)
        compared.append(item)
    return compared


def export_columns() -> list[tuple[str, str]]:
    """(key, header) of the flat export, headers in the names a person reads."""
    head = [
        ("run", "Run"),
        ("profile", "Profile"),
        ("version", "Version"),
        ("host", "Host"),
        ("measured_at", "Measured at"),
        ("reference", "Reference"),
        ("concurrency", "Streams"),
        ("repeats", "Repeats"),
    ]
    figures = [(name, metric_label(name)) for name in FIGURES]
    tail = [
        ("output_tok_s_change_pct", "Output tokens/s change against the reference (%)"),
        ("verdict", "Verdict"),
        ("headline", "In words"),
        ("certainty", "How sure"),
    ]
    return head + figures + tail


def export_rows(compared: Sequence[ComparedRun]) -> list[dict[str, Any]]:
    """One row per run and concurrency level, keyed as `export_columns`."""
    rows = []
    for item in compared:
        run = item.run
        for lv in item.levels:
            row: dict[str, Any] = {
                "run": run.pk,
                "profile": run.profile.name,
                "version": run.profile_version.number if run.profile_version else None,
                "host": run.host.name,
                "measured_at": run.created_at.isoformat(timespec="seconds"),
                "reference": item.is_reference,
                "concurrency": lv.concurrency,
                "repeats": lv.repeats,
                **lv.figures,
                "output_tok_s_change_pct": item.change(lv.concurrency, "output_tok_s"),
                "verdict": item.verdict.verdict if item.verdict else "",
                "headline": item.headline,
                "certainty": item.certainty,
            }
            rows.append(row)
    return rows


__all__ = [
    "FIGURES",
    "ComparedRun",
    "LevelFigures",
    "compare_runs",
    "export_columns",
    "export_rows",
    "level_figures",
    "run_label",
]
