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
4. with more repeats (the noisy case measured again, `more_repeats`), a change beyond the
   threshold whose repeats overlap a little is still "regressed" when the one-sided
   Mann-Whitney test (exact, `mann_whitney_p`) puts the chance that nothing changed at
   `ALPHA` (5%) or below: "no overlap" is that test's extreme (U = 0), so small runs are
   judged exactly as before.

How sure a verdict is (`how_sure`, in words): the repeats on each side, that chance, and
Cliff's delta (the share of repeat pairs in which the candidate is worse, minus the share
in which it is better) with Romano et al.'s (2006) bands for negligible/small/medium/large.

`more_repeats` says how many more candidate repeats fit a time budget while the verdict is
noisy; `drift` compares a reference measured again (at the end of a trial) with its first
measurement, so verdicts taken on a machine whose speed moved are marked unreliable.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from servebench.names import metric_name, metric_unit, streams
from servebench.schema import BenchResult, LevelResult

DEFAULT_THRESHOLD_PCT = 5.0
PASS, REGRESSED, NOISY = "pass", "regressed", "noisy"
ALPHA = 0.05  # the chance, when nothing changed, at which a slowdown counts as shown
MAX_REPEATS = 12  # candidate repeats at most, however large the budget
REPEAT_STEP = 2  # repeats added per round while the verdict is noisy

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
    # one-sided exact Mann-Whitney: the chance of repeats this far apart if nothing changed
    p_worse: float = 1.0
    p_better: float = 1.0
    cliffs_delta: float = 0.0  # +1: every candidate repeat worse than every baseline one

    def sentence(self) -> str:
        """ "Output tokens/s at 1 stream down 15.0% (74.00 → 62.90 tok/s; …)" """
        higher = METRICS[self.metric][1]
        worse = self.change_pct > 0
        direction = "down" if higher == worse else "up"
        unit = metric_unit(self.metric)
        return (
            f"{metric_name(self.metric)} at {streams(self.concurrency)} {direction} "
            f"{abs(self.change_pct):.1f}% ({self.baseline_median:.2f} → "
            f"{self.candidate_median:.2f} {unit}; repeats spread {self.spread_pct:.1f}%)"
        )


@dataclass
class GateResult:
    verdict: str
    threshold_pct: float
    comparisons: list[MetricComparison] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)

    @property
    def sure(self) -> bool:
        """Decided beyond reasonable doubt: a pass, or a regression shown by at least one
        comparison at `ALPHA` (a no-overlap regression of 2 + 2 repeats, a 1-in-6 chance
        when nothing changed, is not sure yet; noise never is)."""
        if self.verdict == PASS:
            return True
        return self.verdict == REGRESSED and any(
            c.verdict == REGRESSED and c.p_worse <= ALPHA for c in self.comparisons
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"sure": self.sure}


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
    # oriented so that larger is worse
    base_w = [sign * v for v in baseline]
    cand_w = [sign * v for v in candidate]
    p_worse = mann_whitney_p(cand_w, base_w)
    p_better = mann_whitney_p(base_w, cand_w)
    if change <= threshold_pct:
        verdict = PASS
    elif not overlap or p_worse <= ALPHA:
        verdict = REGRESSED
    else:
        verdict = NOISY
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
        p_worse=p_worse,
        p_better=p_better,
        cliffs_delta=cliffs_delta(cand_w, base_w),
    )


def _pairs(larger: Sequence[float], smaller: Sequence[float]) -> float:
    """Pairs (x in larger, y in smaller) with x > y, ties counting one half."""
    return sum(1.0 if x > y else 0.5 if x == y else 0.0 for x in larger for y in smaller)


def cliffs_delta(xs: Sequence[float], ys: Sequence[float]) -> float:
    """P(x > y) - P(x < y) over all pairs: +1 when every x is above every y."""
    if not xs or not ys:
        return 0.0
    above = sum(1 for x in xs for y in ys if x > y)
    below = sum(1 for x in xs for y in ys if x < y)
    return (above - below) / (len(xs) * len(ys))


def mann_whitney_p(xs: Sequence[float], ys: Sequence[float]) -> float:
    """One-sided exact p of "xs tend to be larger than ys": the chance, when both come
    from one distribution, that as few pairs or fewer have x < y as seen here (U of xs
    below ys; ties one half, counted against the claim). 3 + 3 values all above: 1/20."""
    n, m = len(xs), len(ys)
    if not n or not m:
        return 1.0
    below = _pairs(ys, xs)  # pairs where the y is larger: evidence against the claim
    counts = _u_distribution(n, m)
    total = sum(counts)
    return sum(c for u, c in enumerate(counts) if u <= below + 1e-9) / total


def _u_distribution(n: int, m: int) -> list[int]:
    """How many of the C(n+m, n) orderings give U = 0, 1, …, n·m (no ties): the
    recurrence f(n, m, u) = f(n-1, m, u-m) + f(n, m-1, u)."""
    # table[j][u] for the current i, built up one value of i at a time
    table = [[1] + [0] * (n * m) for _ in range(m + 1)]  # i = 0: only U = 0
    for i in range(1, n + 1):
        row = [[0] * (n * m + 1) for _ in range(m + 1)]
        row[0][0] = 1
        for j in range(1, m + 1):
            for u in range(i * j + 1):
                row[j][u] = (table[j][u - j] if u >= j else 0) + row[j - 1][u]
        table = row
    return table[m]


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


# -- how sure a verdict is ---------------------------------------------------------------


def effect_size_words(delta: float) -> str:
    """Cliff's delta in Romano et al.'s (2006) bands: 0.147, 0.33, 0.474."""
    size = abs(delta)
    if size < 0.147:
        return "negligible"
    if size < 0.33:
        return "small"
    if size < 0.474:
        return "medium"
    return "large"


def how_sure(c: MetricComparison) -> str:
    """One comparison's certainty in words: repeats, the chance it is luck, effect size."""
    n_base, n_cand = len(c.baseline), len(c.candidate)
    repeats = f"{n_cand} repeat{'s' if n_cand != 1 else ''} against {n_base}"
    if n_base < 2 or n_cand < 2:
        return f"{repeats}: one repeat on a side, so the threshold alone decides (no spread known)"
    effect = f"{effect_size_words(c.cliffs_delta)} effect (Cliff's delta {c.cliffs_delta:+.2f})"
    if c.verdict == REGRESSED and c.p_worse <= ALPHA:
        return (
            f"{repeats}: sure it is slower, a {_chance(c.p_worse)} chance of repeats this far "
            f"apart if nothing changed; {effect}"
        )
    if c.verdict == REGRESSED:
        return (
            f"{repeats}: every repeat slower, but with so few repeats that happens by chance "
            f"{_chance(c.p_worse)} of the time when nothing changed; more repeats would make "
            "it sure"
        )
    if c.verdict == NOISY:
        return (
            f"{repeats}: not sure, the repeats overlap ({_chance(c.p_worse)} chance of this "
            f"if nothing changed, {ALPHA:.0%} needed); {effect}"
        )
    if c.change_pct < 0 and c.p_better <= ALPHA:
        return f"{repeats}: sure it is faster ({_chance(c.p_better)} chance if nothing changed)"
    return f"{repeats}: within the threshold"


def _chance(p: float) -> str:
    return f"{p:.1%}" if p >= 0.001 else "< 0.1%"


def deciding_comparison(result: GateResult) -> MetricComparison | None:
    """The comparison a headline names: among those with the run's verdict, output
    tokens/s when it is one of them (what a person compares first), else the largest
    change."""
    deciding = [c for c in result.comparisons if c.verdict == result.verdict]
    throughput = [c for c in deciding if c.metric == "output_throughput"]
    pool = throughput or deciding
    if not pool:
        return None
    if result.verdict == PASS:  # the first level's throughput: what a person reads first
        return pool[0]
    return max(pool, key=lambda c: c.change_pct)


def verdict_certainty(result: GateResult) -> str:
    """The run's verdict and how sure it is, from `deciding_comparison`."""
    c = deciding_comparison(result)
    if c is None:
        return f"{result.verdict}: nothing compared"
    return f"{result.verdict}: {c.sentence()} — {how_sure(c)}"


# -- more repeats while noisy --------------------------------------------------------------


def more_repeats(
    result: GateResult,
    *,
    repeats_so_far: int,
    seconds_per_repeat: float,
    spent_s: float,
    budget_s: float,
    max_repeats: int = MAX_REPEATS,
    step: int = REPEAT_STEP,
) -> int:
    """How many more candidate repeats to measure now: `step` (or fewer) while the verdict
    is not sure (`GateResult.sure`: noisy, or a regression that few repeats could show by
    chance) and they fit the budget (each costs `seconds_per_repeat`, from the repeats so
    far) and `max_repeats`; 0 when the verdict is sure or nothing more fits."""
    if result.sure or seconds_per_repeat <= 0:
        return 0
    fit = int(max(0.0, budget_s - spent_s) // seconds_per_repeat)
    return max(0, min(step, max_repeats - repeats_so_far, fit))


# -- measuring until decided ----------------------------------------------------------------


@dataclass(frozen=True)
class Decided:
    """What `measure_until_decided` ended with: the candidate's repeats, all of them, as
    one result; the gate's verdict on them; how many measurements that took (1: the
    first was decided), the seconds spent on them, and why it stopped, in words."""

    result: BenchResult
    verdict: GateResult
    rounds: int
    spent_s: float
    stopped: str
    added_repeats: int = 0
    log: list[str] = field(default_factory=list)
    baseline: BenchResult | None = None


def _repeats(result: BenchResult) -> int:
    return max((lv.repeat for lv in result.levels), default=-1) + 1


def measure_until_decided(
    *,
    baseline: BenchResult,
    first: BenchResult,
    first_s: float,
    measure: Callable[[int], BenchResult],
    threshold_pct: float,
    budget_s: float,
    clock: Callable[[], float] = time.monotonic,
    log: Callable[[str], None] | None = None,
    measure_baseline: Callable[[int], BenchResult] | None = None,
) -> Decided:
    """Gate `first` against `baseline`; while noisy, `measure(n)` n more repeats of the
    candidate (same settings, no warm-up) and gate them all, as long as the next round fits
    `budget_s` (seconds per repeat from the rounds so far; `more_repeats`). With
    `measure_baseline` (the baseline's server still there, as in a trial or a GPU script)
    each round measures the baseline n more times first, so both sides grow: a noisy
    baseline cannot be outvoted by the candidate's repeats alone. An incomplete or cancelled
    round ends it; what was measured before it stands. `Decided.baseline` is the baseline
    as finally judged."""
    result, spent, rounds, lines = first, 0.0, 1, []
    verdict = gate(baseline, result, threshold_pct)

    def say(line: str) -> None:
        lines.append(line)
        if log is not None:
            log(line)

    per_repeat = first_s / max(_repeats(first), 1)
    while True:
        n = more_repeats(
            verdict,
            repeats_so_far=_repeats(result),
            seconds_per_repeat=per_repeat,
            spent_s=spent,
            budget_s=budget_s,
        )
        if n == 0:
            break
        state = "noisy" if verdict.verdict == NOISY else "not sure yet"
        say(
            f"{state} after {_repeats(result)} repeats: measuring {n} more ({spent:.0f} of "
            f"{budget_s:g} s spent on more repeats)"
        )
        started = clock()
        base_more = measure_baseline(n) if measure_baseline is not None else None
        more = measure(n)
        took = clock() - started
        spent += took
        rounds += 1
        broken = [r for r in (base_more, more) if r is not None and (r.incomplete or not r.levels)]
        if broken:
            say(
                f"the further repeats were incomplete ({broken[0].error or 'errors'}): kept "
                f"the {_repeats(result)} complete ones"
            )
            return Decided(
                result, verdict, rounds, spent, "incomplete", _added(first, result), lines, baseline
            )
        if base_more is not None:
            baseline = baseline.with_more_repeats(base_more)
        result = result.with_more_repeats(more)
        per_repeat = max(per_repeat, took / n)
        verdict = gate(baseline, result, threshold_pct)
    stopped = _why_stopped(verdict, result, spent, budget_s)
    if rounds > 1 or not verdict.sure:
        say(f"{stopped} after {_repeats(result)} repeats")
    return Decided(result, verdict, rounds, spent, stopped, _added(first, result), lines, baseline)


def _added(first: BenchResult, result: BenchResult) -> int:
    return _repeats(result) - _repeats(first)


def _why_stopped(verdict: GateResult, result: BenchResult, spent: float, budget: float) -> str:
    if verdict.sure:
        return f"decided ({verdict.verdict})"
    if verdict.verdict == REGRESSED:
        return "regressed, though not sure: " + _unsure_because(result, spent, budget)
    return "still noisy: " + _unsure_because(result, spent, budget)


def _unsure_because(result: BenchResult, spent: float, budget: float) -> str:
    if budget <= 0:
        return "no time budget for more repeats"
    if _repeats(result) >= MAX_REPEATS:
        return f"{MAX_REPEATS} repeats, the most measured"
    return f"the {budget:g} s budget for more repeats ({spent:.0f} s spent) fits no further round"


# -- drift of a reference --------------------------------------------------------------------


@dataclass
class Drift:
    """A reference measured again compared with its earlier measurement."""

    drifted: bool
    threshold_pct: float
    comparisons: list[MetricComparison] = field(default_factory=list)
    largest: MetricComparison | None = None

    def sentence(self) -> str:
        """In words, for a results page or a step log."""
        if self.largest is None:
            return "the reference was not measured again at the same concurrency levels"
        c = self.largest
        moved = f"{c.sentence()} against its first measurement"
        if self.drifted:
            return (
                f"the reference measured again moved beyond the {self.threshold_pct:g}% "
                f"threshold ({moved}): the machine's speed drifted while the candidates ran, "
                "so their verdicts are unreliable"
            )
        return (
            f"the reference measured again stayed within {self.threshold_pct:g}% of its first "
            f"measurement (largest change: {moved}): the verdicts stand"
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"sentence": self.sentence()}


def drift(
    earlier: BenchResult, later: BenchResult, threshold_pct: float = DEFAULT_THRESHOLD_PCT
) -> Drift:
    """Did the reference's speed move, either way, by more than the threshold (median over
    repeats, every gated metric at every level both measured)?"""
    shared = [c for c in earlier.concurrencies if c in later.concurrencies]
    comparisons = []
    for concurrency in shared:
        first = [lv for lv in earlier.repeats_of(concurrency) if lv.completed]
        again = [lv for lv in later.repeats_of(concurrency) if lv.completed]
        if not first or not again:
            continue
        for metric, (read, _) in METRICS.items():
            comparisons.append(
                compare_metric(
                    metric,
                    concurrency,
                    [read(lv) for lv in first],
                    [read(lv) for lv in again],
                    threshold_pct,
                )
            )
    if not comparisons:
        return Drift(False, threshold_pct)
    largest = max(comparisons, key=lambda c: abs(c.change_pct))
    return Drift(abs(largest.change_pct) > threshold_pct, threshold_pct, comparisons, largest)


# -- the result in words ---------------------------------------------------------------------


def headline(result: GateResult, reference: str = "the baseline") -> str:
    """The verdict as a step header or a results row says it: "14.7% slower than the
    baseline at 1 stream", "not decided: …", "within 5% of the baseline (…)"."""
    c = deciding_comparison(result)
    if c is None:
        return f"not compared with {reference}"
    where = f"at {streams(c.concurrency)}"
    named = "" if c.metric == "output_throughput" else f" ({metric_name(c.metric)})"
    if result.verdict == PASS:
        first = next(
            (x for x in result.comparisons if x.metric == "output_throughput"),
            result.comparisons[0],
        )
        if first.change_pct < -result.threshold_pct:
            return (
                f"{-first.change_pct:.1f}% faster than {reference} at {streams(first.concurrency)}"
            )
        return (
            f"within {result.threshold_pct:g}% of {reference} ({metric_name(first.metric)} "
            f"{-first.change_pct if METRICS[first.metric][1] else first.change_pct:+.1f}% at "
            f"{streams(first.concurrency)})"
        )
    words = f"{abs(c.change_pct):.1f}% slower than {reference} {where}{named}"
    if result.verdict == NOISY:
        return f"not decided: {words}, but the repeats overlap"
    return words
