"""Doubles of a trial's service steps and benchmark, scripted per unit, on an in-memory
host (`tests.doubles.unit_host`): the real trial driver, preflights, push, daemon-reload
and remove run against `UnitHostTransport`; stop / GPU-clean / start / journal /
readiness / vLLM check act on its unit set as scripted (`TrialScript`), and the benchmark
answers per role with the figures a script gives. Never imported by product code.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from deploys.jobs import benchmark as benchmark_hook
from deploys.jobs.context import JobContext
from deploys.jobs.flow import Step
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Started, Stopped, Watched
from deploys.jobs.steps import StepResult
from hostops.gpu_clean import ServiceIdentity
from perf.step import change_said

PRODUCTION_TOK_S = 73.8


@dataclass
class TrialScript:
    """What happens to which unit (names with `.service`, or its role: "candidate 2",
    "production", for candidates that take production's unit name): rejected by vLLM,
    crashing while it loads, its change of output tok/s against production in % (negative:
    slower; default -14.7), a cancel asked for during (unit, step) by `on_cancel`, GPUs
    that stay busy after a unit's stop, and production's speed once it is back."""

    rejected: set[str] = field(default_factory=set)
    crash: set[str] = field(default_factory=set)
    change_pct: dict[str, float] = field(default_factory=dict)
    cancel_at: tuple[str, str] | None = None
    on_cancel: Callable[[Any], None] | None = None
    stuck_gpus: set[str] = field(default_factory=set)
    production_back_tok_s: float = PRODUCTION_TOK_S
    has_baseline: bool = True
    seen: list[tuple[str, str]] = field(default_factory=list)  # (unit, step) in order


def role(ctx: JobContext) -> str:
    """The unit's role in the trial: "production" or "candidate i"."""
    position = ctx.trial_position
    return "production" if not position else f"candidate {position}"


def _names(ctx: JobContext) -> set[str]:
    return {ctx.unit, role(ctx)}


class _Doubles:
    def __init__(self, script: TrialScript) -> None:
        self.script = script

    def step(self, real: Step) -> Step:
        body = getattr(self, real.name, None)
        if body is None:
            return real

        def run(ctx: JobContext, rec: Recorder, *needs: object) -> StepResult:
            self.script.seen.append((ctx.unit, real.name))
            at = self.script.cancel_at
            if at in {(n, real.name) for n in _names(ctx)} and callable(self.script.on_cancel):
                self.script.on_cancel(ctx.request)
                if real.name in ("gpu_clean", "journal_check", "readiness"):
                    return StepResult.cancelled(f"cancelled during {real.name}")
            result: StepResult = body(ctx, rec)
            return result

        run.__name__ = real.name
        return dataclasses.replace(real, run=run)

    def vllm_check(self, ctx: JobContext, rec: Recorder) -> StepResult:
        if _names(ctx) & self.script.rejected:
            return StepResult.failed(
                "vLLM 0.11.0 rejects the unit's speculative config: unknown method 'ngramx'"
            )
        return StepResult.success()

    def stop(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Stopped(ServiceIdentity(unit=ctx.unit)))
        ctx.transport.systemctl("stop", "--", ctx.unit, check=False)
        return StepResult.success(active_state="inactive")

    def gpu_clean(self, ctx: JobContext, rec: Recorder) -> StepResult:
        if _names(ctx) & self.script.stuck_gpus:
            return StepResult.failed("GPUs 0-7 still hold 70000 MiB after 30 s", rollback=True)
        return StepResult.success(clean=True)

    def start(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Started(cursor="", started_at=time.monotonic(), restarts=0))
        ctx.transport.systemctl("start", "--", ctx.unit, check=False)
        return StepResult.success()

    def journal_check(self, ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Watched(cursor="", journal_lines=(), healthy=False))
        return StepResult.success()

    def readiness(self, ctx: JobContext, rec: Recorder) -> StepResult:
        if _names(ctx) & self.script.crash:
            line = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"
            rec.read("offending_lines", [line])
            rec.provide(Watched(cursor="", journal_lines=(line,), healthy=False))
            ctx.transport.systemctl("stop", "--", ctx.unit, check=False)
            return StepResult.failed(
                f"{ctx.unit} ran out of GPU memory while loading", rollback=True
            )
        rec.provide(Watched(cursor="", journal_lines=(), healthy=True))
        return StepResult.success(ready=True)


def trial_doubles(script: TrialScript) -> Callable[[Step], Step]:
    """Replaces a trial's service steps by name (the others run as they are)."""
    return _Doubles(script).step


def scripted_benchmark(script: TrialScript) -> benchmark_hook.BenchmarkStep:
    """The benchmark hook answering per role: the reference (skipped: a baseline exists,
    or measured), a candidate's verdict against production from `change_pct`, and
    production's speed once back."""

    def measure(job: benchmark_hook.BenchmarkJob) -> StepResult:
        unit = job.ctx.unit
        if job.role == benchmark_hook.REFERENCE:
            if script.has_baseline:
                return StepResult.skipped("production has a baseline here (run #1)")
            return StepResult.success(output_tok_s=PRODUCTION_TOK_S, baseline="set")
        if job.role == benchmark_hook.CONFIRM:
            tok_s = script.production_back_tok_s
            slower = tok_s < PRODUCTION_TOK_S * 0.95
            return StepResult.success(
                output_tok_s=tok_s,
                baseline_tok_s=PRODUCTION_TOK_S,
                slower=slower,
                drifted=slower,
                drift="the reference measured again moved beyond the 5% threshold"
                if slower
                else "the reference measured again stayed within 5%",
                summary=f"production back at {tok_s:.1f} tok/s",
            )
        change = script.change_pct.get(role(job.ctx), script.change_pct.get(unit, -14.7))
        tok_s = round(PRODUCTION_TOK_S * (1 + change / 100), 1)
        changes = [
            {
                "metric": key,
                "concurrency": 1,
                "change_pct": -change,
                "said": change_said(key, 1, -change),
            }
            for key in ("output_throughput", "tpot_p50_ms")
        ]
        figures = {"output_tok_s": tok_s, "changes": changes, "baseline_tok_s": PRODUCTION_TOK_S}
        if change <= -5:
            summary = f"{-change:.1f}% slower than production at 1 stream"
            return StepResult.regressed(
                summary, rollback=False, gate="regressed", summary=summary, **figures
            )
        if change >= 5:
            summary = f"{change:.1f}% faster than production at 1 stream"
        else:
            summary = f"within 5% of production (Output tokens/s {change:+.1f}% at 1 stream)"
        return StepResult.success(gate="pass", summary=summary, **figures)

    return measure


__all__ = ["PRODUCTION_TOK_S", "TrialScript", "scripted_benchmark", "trial_doubles"]
