"""How long a sweep's trial would keep production down, shown before it is sent: per
variant the last load on the host (`deploys.step_notes.last_load`, readiness's
`ready_after_s`) plus a benchmark as long as production's reference run (a trial measures
every variant with the reference's settings) plus the pipeline's own overhead, then
production's own restart and short benchmark at the end (docs/sweeps.md). Read-only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from deploys.step_notes import last_load
from perf.models import BenchRun
from perf.selectors import baseline_for, runs_for

# The trial's own steps per variant beyond its stop, load and benchmark (journal check,
# GPU-clean, unit push/removal): the target the trial is held to.
OVERHEAD_PER_VARIANT_S = 5.0


def bench_seconds(run: BenchRun) -> float | None:
    """Wall time of a run's measurements: the sum of its levels' durations (all repeats)."""
    levels = (run.result or {}).get("levels") or []
    total = sum(float(lv.get("duration_s") or 0) for lv in levels if isinstance(lv, dict))
    return total or None


@dataclass(frozen=True)
class SweepEstimate:
    """The figures and where each comes from, in words."""

    points: int
    load_s: float | None
    load_from: str
    bench_s: float | None
    bench_from: str
    overhead_s: float = OVERHEAD_PER_VARIANT_S

    @property
    def per_point_s(self) -> float | None:
        if self.load_s is None or self.bench_s is None:
            return None
        return self.load_s + self.bench_s + self.overhead_s

    @property
    def total_s(self) -> float | None:
        """Every variant, then production's restart and its confirming benchmark."""
        per = self.per_point_s
        if per is None or self.load_s is None or self.bench_s is None:
            return None
        return self.points * per + self.load_s + self.bench_s

    def words(self) -> str:
        total = self.total_s
        if total is None:
            missing = [
                what
                for what, value in (
                    ("no earlier load", self.load_s),
                    ("no benchmark of production", self.bench_s),
                )
                if value is None
            ]
            return (
                f"{self.points} variant{'s' if self.points != 1 else ''}; no estimate yet: "
                f"{' and '.join(missing)} on this host to go by."
            )
        return (
            f"{self.points} variant{'s' if self.points != 1 else ''} × "
            f"({duration(self.load_s)} load + {duration(self.bench_s)} benchmark + "
            f"{duration(self.overhead_s)} overhead), then production's restart: about "
            f"{duration(total)} with production stopped."
        )


def duration(seconds: float | None) -> str:
    """ "42 s", "3 min 20 s", "1 h 5 min"."""
    if seconds is None:
        return "—"
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    return f"{s // 3600} h {(s % 3600) // 60} min"


def reference_run(profile: Any, host: Any) -> BenchRun | None:
    """The run a trial would measure against: the profile's baseline on the host, else its
    newest run there."""
    baseline = baseline_for(profile, host)
    if baseline is not None:
        return baseline.run
    return runs_for(profile, host).first()


def sweep_estimate(*, host: Any, profile: Any, points: int) -> SweepEstimate:
    """The estimate for `points` variants of `profile` on `host`."""
    load = last_load(host.pk, unit_name=profile.name)
    if load is None:
        load_s, load_from = None, "no earlier load on this host"
    else:
        which = "this unit" if load.unit_name == profile.name else load.unit_name
        load_s, load_from = load.seconds, f"the last load of {which} here (#{load.request_id})"
    ref = reference_run(profile, host)
    bench_s = bench_seconds(ref) if ref is not None else None
    if ref is None:
        bench_from = f"no benchmark of {profile.name} on this host"
    elif bench_s is None:
        bench_from = f"run #{ref.pk} has no durations"
    else:
        bench_from = f"the reference run #{ref.pk} of {profile.name}"
    return SweepEstimate(points, load_s, load_from, bench_s, bench_from)


__all__ = [
    "OVERHEAD_PER_VARIANT_S",
    "SweepEstimate",
    "bench_seconds",
    "duration",
    "reference_run",
    "sweep_estimate",
]
