"""The benchmark step: measure the freshly started service against its baseline.

Empty in the restart pipeline; the benchmark issue fills `benchmark`. The contract the
runner relies on:

- it runs after readiness, with the new unit healthy: `benchmark(job) -> StepResult`, where
  `job` is a `BenchmarkJob`;
- `StepResult.success(**figures)`: keep the new unit;
- `StepResult.skipped(reason)`: nothing to measure (what it returns today);
- `StepResult.failed(reason, rollback=False)`: could not measure; the job fails, and the
  previous unit is put back only when `rollback=True`;
- `StepResult.regressed(reason, **figures)`: slower than the baseline; the job fails and
  the previous unit is put back (when the profile allows rollbacks).

What it may use: `job.service` (`hostops.service.VllmService`: `base_url` as seen
from the host, `served_model_name`, `api_key`), and from the job's context `job.ctx`: its
`transport` (commands on the host), `host`, `request` (`request.profile_version.data` is
the profile). It reports with `job.rec.log`, `job.rec.read` and `job.rec.progress`. A long
measurement checks `job.ctx.cancel_requested()` between requests and returns early when it
is True. One argument, so what the pipeline hands the benchmark may grow (a trial's
reference run) without changing the signature the `perf` app implements.

The measurement itself lives in the `perf` app (results, baselines, policies), which
depends on `deploys`, not the other way round: `perf` registers its step here when Django
loads it (`perf.apps.PerfConfig.ready`). Without it the step is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult
from hostops.service import VllmService
from units.models import ProfileVersion

DEPLOY = "deploy"  # a deploy's new unit, gated against its own (profile, host) baseline
# A trial (deploys.jobs.trial): production measured first where it has no baseline on the
# host yet (that run becomes its baseline: the reference); a candidate, measured with the
# baseline's settings and gated against production's baseline (`against`), never becoming
# a baseline itself; production measured again at the end (its speed, and the drift).
REFERENCE, CANDIDATE, CONFIRM = "reference", "candidate", "confirm"


@dataclass(frozen=True)
class BenchmarkJob:
    """What the benchmark is given: the job's context, the step's recorder, the vLLM
    server to measure (None: the unit runs none), what it is measured for (`role`), and
    for a trial's candidate the production version whose baseline it is gated against."""

    ctx: JobContext
    rec: Recorder
    service: VllmService | None
    role: str = DEPLOY
    against: ProfileVersion | None = None


BenchmarkStep = Callable[[BenchmarkJob], StepResult]
_implementation: BenchmarkStep | None = None


def register(step: BenchmarkStep | None) -> None:
    """Install the function that measures (None: back to skipping)."""
    global _implementation
    _implementation = step


def registered() -> BenchmarkStep | None:
    """The function installed now (a test that installs its own puts this one back)."""
    return _implementation


def benchmark(job: BenchmarkJob) -> StepResult:
    """The benchmark hook (see the module docstring for its contract)."""
    if _implementation is None:
        return StepResult.skipped("no benchmark is installed (the perf app is not loaded)")
    return _implementation(job)


__all__ = [
    "CANDIDATE",
    "CONFIRM",
    "DEPLOY",
    "REFERENCE",
    "BenchmarkJob",
    "benchmark",
    "register",
    "registered",
]
