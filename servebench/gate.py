"""The regression gate: is a candidate run worse than the baseline beyond the threshold?

Pure functions over results (no I/O), so the deploy pipeline, the CLI and the GPU script
give the same verdict for the same numbers.

Metrics (per concurrency level measured in both runs): output tokens/s (lower is worse),
TPOT p50 and TTFT p50 (higher is worse).

Statistics, for each metric with k baseline and m candidate repeats:
1. change = (median of the candidate's repeats - median of the baseline's repeats)
   / median of the baseline's repeats, signed so that positive means worse;
2. the change counts as a regression only if it exceeds the threshold (default 5%) AND
   the repeats do not overlap: the best candidate repeat is still worse than the worst
   baseline repeat. Medians resist one outlying repeat; the overlap test is the
   distribution-free check (with 3 + 3 repeats, all candidates worse than all baselines
   happens by chance with probability 1/20 when nothing changed — a one-sided
   Mann-Whitney U = 0);
3. a change beyond the threshold whose repeats overlap is "noisy": the spread between
   repeats is as large as the change, so more repeats are needed before deciding. The
   gate does not roll back on noise; the job records it for a person.
With one repeat per side the overlap test is the threshold test itself.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from servebench.schema import BenchResult, LevelResult

DEFAULT_THRESHOLD_PCT = 5.0
PASS, REGRESSED, NOISY = "pass", "regressed", "noisy"

# name → (how to read it from a level, True when higher is better)
METRICS: dict[str, tuple[Callable[[LevelResult], float], bool]] = {
    "output_throughput": (lambda lv: lv.output_throughput, True),
    "tpot_p50_ms": (lambda lv: lv.tpot_ms.median, False),
    "ttft_p50_ms": (lambda lv: lv.ttft_ms.median, False),
}


@dataclass
class MetricComparison:
    metric: str
    concurrency: int | None
    baseline: list[float]
    candidate: list[float]
    baseline_median: float
    candidate_median: float
    change_pct: float  # positive = worse
    spread_pct: float  # largest (max - min) / median across repeats of either side
    overlap: bool
    verdict: str

    def sentence(self) -> str:
        direction = "down" if METRICS[self.metric][1] else "up"
        return (
            f"{self.metric} at concurrency {self.concurrency} {direction} "
            f"{abs(self.change_pct):.1f}% ({self.baseline_median:.2f} → "
            f"{self.candidate_median:.2f}; repeats spread {self.spread_pct:.1f}%)"
        )


@dataclass
class GateResult:
    verdict: str
    threshold_pct: float
    comparisons: list[MetricComparison] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def compare_metric(
    metric: str,
    concurrency: int | None,
    baseline: Sequence[float],
    candidate: Sequence[float],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
) -> MetricComparison:
    """One metric's verdict from its per-repeat values (see the module docstring)."""
    if not baseline or not candidate:
        raise ValueError(f"{metric}: need at least one repeat on each side")
    higher_is_better = METRICS[metric][1]
    base_med, cand_med = statistics.median(baseline), statistics.median(candidate)
    sign = -1.0 if higher_is_better else 1.0
    change = sign * (cand_med - base_med) / base_med * 100 if base_med else 0.0
    spread = max(_spread(baseline), _spread(candidate))
    worst_base = min(baseline) if higher_is_better else max(baseline)
    best_cand = max(candidate) if higher_is_better else min(candidate)
    overlap = sign * (best_cand - worst_base) <= 0
    verdict = PASS if change <= threshold_pct else NOISY if overlap else REGRESSED
    return MetricComparison(
        metric=metric,
        concurrency=concurrency,
        baseline=list(baseline),
        candidate=list(candidate),
        baseline_median=base_med,
        candidate_median=cand_med,
        change_pct=change,
        spread_pct=spread,
        overlap=overlap,
        verdict=verdict,
    )


def _spread(values: Sequence[float]) -> float:
    med = statistics.median(values)
    return (max(values) - min(values)) / med * 100 if med else 0.0


def gate(
    baseline: BenchResult,
    candidate: BenchResult,
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
) -> GateResult:
    """Regressed if any metric at any shared concurrency regressed; noisy if any was noisy."""
    shared = [c for c in baseline.concurrencies if c in candidate.concurrencies]
    if not shared:
        raise ValueError(
            "the runs share no concurrency level: baseline "
            f"{baseline.concurrencies}, candidate {candidate.concurrencies}"
        )
    comparisons = []
    for concurrency in shared:
        base = [lv for lv in baseline.repeats_of(concurrency) if lv.completed]
        cand = [lv for lv in candidate.repeats_of(concurrency) if lv.completed]
        if not base or not cand:
            raise ValueError(f"no completed requests at concurrency {concurrency}")
        for metric, (read, _) in METRICS.items():
            comparisons.append(
                compare_metric(
                    metric,
                    concurrency,
                    [read(lv) for lv in base],
                    [read(lv) for lv in cand],
                    threshold_pct,
                )
            )
    verdicts = {c.verdict for c in comparisons}
    verdict = REGRESSED if REGRESSED in verdicts else NOISY if NOISY in verdicts else PASS
    reasons = [c.sentence() + f": {c.verdict}" for c in comparisons if c.verdict != PASS]
    return GateResult(verdict, threshold_pct, comparisons, reasons)
