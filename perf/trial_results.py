"""Candidates on one host against a reference run (production's baseline): the building
block of a trial's results page and of "compare these versions on host H".

`compare_on_host(host, reference, candidates)` gives per candidate its figures per
concurrency level, the change against the reference, the gate's verdict in one word a
person scans (faster / slower / noisy / no change / failed), the headline and how sure,
acceptance per draft position, the load time its deploy measured; plus the charts
(perf.charts: tok/s against TTFT and against concurrency, the reference dashed, the Pareto
front marked) and the export rows. templates/perf/_comparison.html renders it. Read-only:
the verdicts are computed here, not stored.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from deploys.models import JobStep
from perf import charts
from perf.comparison import ComparedRun, compare_runs, export_columns, export_rows
from perf.models import BenchRun
from perf.selectors import baseline_for, policy_for
from servebench.gate import NOISY, REGRESSED
from servebench.names import METRIC_NAMES
from units.models import ProfileVersion
from units.selectors import profile_latest_version

# Columns of the table per level, in the names a person reads (servebench.names).
TABLE_FIGURES = (
    "output_tok_s",
    "ttft_p50_ms",
    "ttft_p99_ms",
    "tpot_p50_ms",
    "tpot_p99_ms",
    "acceptance_rate",
    "acceptance_length",
)
FASTER, SLOWER, NO_CHANGE, FAILED = "faster", "slower", "no change", "failed"
VERDICT_BADGES = {FASTER: "ok", NO_CHANGE: "ok", SLOWER: "error", NOISY: "warning", FAILED: "error"}


@dataclass
class Candidate:
    """One compared run with what the trial page shows beside its figures."""

    item: ComparedRun
    word: str  # faster / slower / noisy / no change / failed; "" for the reference
    change_pct: float | None  # output tok/s at the first shared level, signed as it moved
    load_s: float | None

    @property
    def badge(self) -> str:
        return VERDICT_BADGES.get(self.word, "")


@dataclass
class HostComparison:
    host: Any
    reference: Candidate | None
    candidates: list[Candidate]
    threshold_pct: float
    reference_name: str
    missing: list[ProfileVersion] = field(default_factory=list)  # versions without a run
    charts: list[charts.Chart] = field(default_factory=list)

    @property
    def missing_rows(self) -> list[tuple[ProfileVersion, bool]]:
        """Each unmeasured version, and whether an ordinary deploy may take it (only a
        profile's latest version is deployable; the others go through a trial)."""
        latest = {v.profile_id: profile_latest_version(profile=v.profile) for v in self.missing}
        return [(v, latest[v.profile_id] == v) for v in self.missing]

    @property
    def rows(self) -> list[Candidate]:
        return ([self.reference] if self.reference else []) + self.candidates

    @property
    def figure_names(self) -> list[tuple[str, str, str]]:
        return [(k, METRIC_NAMES[k].name, METRIC_NAMES[k].unit) for k in TABLE_FIGURES]

    def export(self) -> dict[str, Any]:
        compared = [c.item for c in self.rows]
        rows = export_rows(compared)
        by_run = {c.item.run.pk: c for c in self.rows}
        for row in rows:
            cand = by_run[row["run"]]
            row["name"] = cand.item.label
            row["verdict_word"] = cand.word
            row["load_s"] = cand.load_s
            level = next(lv for lv in cand.item.levels if lv.concurrency == row["concurrency"])
            row["acceptance_per_position"] = list(level.per_position)
        return {"host": self.host.name, "columns": dict(comparison_columns()), "rows": rows}


def comparison_columns() -> list[tuple[str, str]]:
    return [
        ("name", "Name"),
        *export_columns(),
        ("verdict_word", "Result"),
        ("load_s", "Load time (s)"),
        ("acceptance_per_position", "Acceptance per draft position"),
    ]


def load_seconds(run: BenchRun) -> float | None:
    """Seconds from start to /health of the deploy that measured `run` (its readiness
    step's `ready_after_s`; None for a run measured outside a deploy)."""
    if run.request_id is None:
        return None
    step = (
        JobStep.objects.filter(
            request_id=run.request_id, name="readiness", status=JobStep.Status.SUCCEEDED
        )
        .order_by("-pk")
        .first()
    )
    value = (step.result or {}).get("ready_after_s") if step else None
    return float(value) if isinstance(value, (int, float)) and value > 0 else None


def verdict_word(item: ComparedRun) -> str:
    """The gate's verdict as the trial page says it."""
    if item.is_reference:
        return ""
    if item.run.incomplete or not item.levels:
        return FAILED
    if item.verdict is None:
        return ""
    if item.verdict.verdict == REGRESSED:
        return SLOWER
    if item.verdict.verdict == NOISY:
        return NOISY
    # As servebench.gate.headline: a pass is "faster" where output tok/s improved by more
    # than the threshold, else within it.
    result = item.verdict
    first = next(
        (c for c in result.comparisons if c.metric == "output_throughput"),
        result.comparisons[0] if result.comparisons else None,
    )
    return FASTER if first is not None and first.change_pct < -result.threshold_pct else NO_CHANGE


def _first_change(item: ComparedRun) -> float | None:
    for lv in item.levels:
        change = item.change(lv.concurrency, "output_tok_s")
        if change is not None:
            return change
    return None


def compare_on_host(
    host: Any,
    reference: BenchRun | None,
    candidates: Sequence[BenchRun],
    *,
    threshold_pct: float | None = None,
    reference_name: str = "production",
    missing: Sequence[ProfileVersion] = (),
    names: Mapping[int, str] | None = None,
    loads: Mapping[int, float | None] | None = None,
) -> HostComparison:
    """`candidates` against `reference` on `host` (the threshold: the reference profile's
    policy unless given). `names` and `loads` (by run pk) replace a run's label and the
    load time read from its deploy: a trial names its candidates and measured several
    loads in one job."""
    if threshold_pct is None:
        threshold_pct = policy_for(reference.profile).threshold_pct if reference else 5.0
    compared = compare_runs(candidates, reference, threshold_pct, name=reference_name)
    for item in compared:
        item.label = (names or {}).get(item.run.pk, item.label)
    rows = [
        Candidate(
            c,
            verdict_word(c),
            _first_change(c),
            loads[c.run.pk] if loads and c.run.pk in loads else load_seconds(c.run),
        )
        for c in compared
    ]
    ref = next((c for c in rows if c.item.is_reference), None)
    return HostComparison(
        host=host,
        reference=ref,
        candidates=[c for c in rows if not c.item.is_reference],
        threshold_pct=threshold_pct,
        reference_name=reference_name,
        missing=list(missing),
        charts=[
            charts.throughput_vs_ttft(compared, chart_id="cmp-ttft"),
            charts.throughput_vs_concurrency(compared, chart_id="cmp-concurrency"),
        ],
    )


def newest_runs(
    host: Any, versions: Sequence[ProfileVersion]
) -> tuple[list[BenchRun], list[ProfileVersion]]:
    """The newest run of each version on `host` (in the versions' order), and the versions
    that have none there."""
    runs, missing = [], []
    for version in versions:
        run = (
            BenchRun.objects.filter(host=host, profile_version=version)
            .select_related("profile", "profile_version", "host", "request")
            .order_by("-created_at", "-pk")
            .first()
        )
        if run is None:
            missing.append(version)
        else:
            runs.append(run)
    return runs, missing


def default_reference(host: Any, versions: Sequence[ProfileVersion]) -> BenchRun | None:
    """The first version's profile's baseline on the host (production's, when the first
    version is production's): what a trial gates against."""
    for version in versions:
        baseline = baseline_for(version.profile, host)
        if baseline is not None:
            return baseline.run
    return None


__all__ = [
    "Candidate",
    "HostComparison",
    "compare_on_host",
    "comparison_columns",
    "default_reference",
    "load_seconds",
    "newest_runs",
    "verdict_word",
]
