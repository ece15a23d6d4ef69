"""The benchmark step: measure the freshly started service against its baseline.

Empty in the restart pipeline; the benchmark issue fills `benchmark`. The contract the
runner relies on:

- it runs after readiness, with the new unit healthy: `benchmark(ctx) -> StepResult`;
- `StepResult.success(**figures)`: keep the new unit;
- `StepResult.skipped(reason)`: nothing to measure (what it returns today);
- `StepResult.failed(reason, rollback=False)`: could not measure; the job fails, and the
  previous unit is put back only when `rollback=True`;
- `StepResult.regressed(reason, **figures)`: slower than the baseline; the job fails and
  the previous unit is put back (when the profile allows rollbacks).

What it may use: `ctx.service` (`deploys.jobs.service.VllmService`: `base_url` as seen
from the host, `served_model_name`, `api_key`), `ctx.transport` (commands on the host),
`ctx.host`, `ctx.request` (`request.profile_version.data` is the profile), and it reports
with `ctx.log`, `ctx.read` and `ctx.progress`. A long measurement checks
`ctx.cancel_requested()` between requests and returns early when it is True.

The measurement itself lives in the `perf` app (results, baselines, policies), which
depends on `deploys`, not the other way round: `perf` registers its step here when Django
loads it (`perf.apps.PerfConfig.ready`). Without it the step is skipped.
"""

from __future__ import annotations

from collections.abc import Callable

from deploys.jobs.steps import DeployContext, StepResult

BenchmarkStep = Callable[[DeployContext], StepResult]
_implementation: BenchmarkStep | None = None


def register(step: BenchmarkStep | None) -> None:
    """Install the function that measures (None: back to skipping)."""
    global _implementation
    _implementation = step


def benchmark(ctx: DeployContext) -> StepResult:
    """The benchmark hook (see the module docstring for its contract)."""
    if _implementation is None:
        return StepResult.skipped("no benchmark is installed (the perf app is not loaded)")
    return _implementation(ctx)


__all__ = ["benchmark", "register"]
