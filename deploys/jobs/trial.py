"""The trial's job: try each candidate in production's place, compare it with production's
baseline on the host, and put production back (docs/trials.md).

In order, each step recorded as a JobStep with the unit it acts on (`trial_position`: 0
production Y, i candidate Xi):

1. trial_preflight (Y): the approval, Y's text on the host still the approved one, the
   candidates still the planned ones (`deploys.trials`), Y running; Y's server found.
2. per candidate, before anything is stopped: candidate_preflight (its stored text linted,
   its server found) and vllm_check (the host's vLLM parses its argv). A candidate the
   host's vLLM rejects is skipped, recorded with the reason; production is not touched.
3. reference_benchmark (Y, while it serves): only where Y has no baseline on the host yet;
   that run becomes its baseline, the reference every candidate is gated against.
4. stop Y, GPU-clean.
5. per candidate: push, daemon_reload, start, journal_check, readiness,
   candidate_benchmark (Y's baseline settings, gated against Y's baseline), then stop and
   GPU-clean whatever happened. A failure is recorded with its evidence and the trial goes
   on with the next; GPUs that do not come free end the candidates there. A candidate
   under Y's own unit name runs in Y's file: after it, production_text_back (Y) writes
   Y's approved text back and reads it back; a read-back that is not it ends the
   candidates there.
6. Y again (or, approved with a promote threshold, the best candidate when it beats Y by
   that much on every gated metric; one under Y's name is pushed into Y's file again):
   production_text_back where a candidate ran in Y's file (Y is never started from a
   file that is not its approved text), gpu_clean, start, journal_check, readiness,
   confirm_benchmark (Y's speed after the restore; slower than its baseline is loud).
7. the candidates' unit files removed, unless kept (or promoted); Y's file never.

A cancel, at any moment, is seen between steps and by the waits: the candidate running then
is stopped and Y is put back, under the trial's own approval (it approved "and back to Y"),
the way `deploys.jobs.runner.cancel_and_put_back` does for a deploy; a cancel does not stop
the way back. The steps are the deploy pipeline's own, given each unit's view of the trial
(`candidate_context`); what each needs and provides is checked with the other pipelines
(`deploys.jobs.pipelines.CHECKED`).
"""

from __future__ import annotations

import copy
import dataclasses
import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from deploys.connect import transport_for
from deploys.jobs import benchmark as benchmark_hook
from deploys.jobs.context import JobContext, never_cancelled
from deploys.jobs.flow import Results, Step
from deploys.jobs.outcome import Job, JobOutcome, cancelled_by
from deploys.jobs.recorder import Recorder
from deploys.jobs.recording import run_step, skip
from deploys.jobs.results import Found, Preflighted, Pushed
from deploys.jobs.steps import Outcome, StepResult, _lint_approved_text, preflight
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.running import record_read
from deploys.trials import candidates_of
from hostops.channel import Transport, TransportError
from hostops.channel.bounds import clip_text
from hostops.channel.push import DEFAULT_UNIT_DIR, sha256_hex
from hostops.service import VllmService, vllm_service
from units.models import ProfileVersion
from units.rendering import environment_items
from units.speculative import spec_config

Status = DeployRequest.Status
TrialOutcome = TrialCandidate.Outcome
PRODUCTION = 0


# --------------------------------------------------------------------------------------
# each unit's view of the trial


def candidate_context(ctx: JobContext, candidate: TrialCandidate) -> JobContext:
    """The context of candidate i's steps: the trial request as that unit (its name,
    approved text, profile version; what the host had under its name), unsaved, so the
    deploy pipeline's steps (push, start, readiness, …) act on it and record on the trial."""
    view = copy.copy(ctx.request)
    view.unit_name = candidate.unit_name
    view.unit_text = candidate.unit_text
    view.unit_sha256 = candidate.unit_sha256
    view.host_unit_sha256 = candidate.host_unit_sha256
    view.profile_version = candidate.profile_version
    # A new context: its `policy` (a cached property) is read from the unit's own profile.
    return dataclasses.replace(ctx, request=view, trial_position=candidate.position)


# --------------------------------------------------------------------------------------
# the trial's own steps


def trial_preflight(ctx: JobContext, rec: Recorder) -> StepResult:
    """The deploy preflight for production Y (the approval with the trial's plan, Y's
    file still the approved text, deny list and adoptions), and Y must be running: it is
    what the candidates are compared with and what comes back at the end."""
    result = preflight(ctx, rec)
    if not result.ok:
        return result
    if not bool(result.data.get("was_active")):
        return StepResult.void(
            f"{ctx.unit} is not running on {ctx.host.name}: there is no production to try "
            "candidates in place of"
        )
    rec.log(f"production: {ctx.unit} (sha256 {ctx.request.unit_sha256[:12]}…), running")
    return result


def candidate_preflight(ctx: JobContext, rec: Recorder) -> StepResult:
    """The candidate's stored text is its approved sha256; linted for the host's versions
    (errors: skipped); its vLLM server and environment found, for vllm_check and readiness."""
    request = ctx.request
    sha = sha256_hex(request.unit_text.encode("utf-8"))
    if sha != request.unit_sha256:
        return StepResult.failed(
            f"the stored text of {ctx.unit} (sha256 {sha}) is not the approved one"
        )
    lint = _lint_approved_text(ctx, rec)
    if lint.errors:
        return StepResult.failed(
            f"lint errors for systemd {lint.systemd_version} / vLLM {lint.vllm_version}: "
            + "; ".join(lint.errors[:5]),
            lint=lint.as_json(),
        )
    environment = dict(environment_items(request.profile_version.data))
    service: VllmService | None = None
    try:
        service = vllm_service(lint.commands, environment)
        rec.log(
            f"vLLM server: {service.model!r} as {service.served_model_name!r} on {service.base_url}"
        )
    except ValueError as exc:
        rec.log(f"no vLLM server found in the unit ({exc}): readiness is the unit's state")
    rec.provide(Preflighted(service, MappingProxyType(environment), was_active=False))
    return StepResult.success(sha256=sha, lint=lint.as_json())


def _production_version(ctx: JobContext) -> ProfileVersion:
    return (
        DeployRequest.objects.select_related("profile_version__profile")
        .get(pk=ctx.request.pk)
        .profile_version
    )


def reference_benchmark(ctx: JobContext, rec: Recorder, found: Found) -> StepResult:
    """Production measured while it still serves, where it has no baseline on the host
    yet (that run becomes its baseline); skipped, naming the baseline, where it has one."""
    return benchmark_hook.benchmark(
        benchmark_hook.BenchmarkJob(ctx, rec, found.service, role=benchmark_hook.REFERENCE)
    )


def candidate_benchmark(ctx: JobContext, rec: Recorder, found: Found) -> StepResult:
    """The candidate measured with production's baseline settings and gated against
    production's baseline on the host (`regressed`: slower; nothing is rolled back here)."""
    return benchmark_hook.benchmark(
        benchmark_hook.BenchmarkJob(
            ctx,
            rec,
            found.service,
            role=benchmark_hook.CANDIDATE,
            against=_production_version(ctx),
        )
    )


def confirm_benchmark(ctx: JobContext, rec: Recorder, found: Found) -> StepResult:
    """Production measured again once it is back: its speed, and whether it came back
    slower than its baseline or the machine drifted while the candidates ran."""
    return benchmark_hook.benchmark(
        benchmark_hook.BenchmarkJob(ctx, rec, found.service, role=benchmark_hook.CONFIRM)
    )


# --------------------------------------------------------------------------------------
# the driver


@dataclass(frozen=True)
class TrialSteps:
    """The steps a trial runs, by part (`deploys.jobs.pipelines.TRIAL`); tests replace
    the service steps with doubles."""

    before: tuple[Step, ...]  # production: trial_preflight
    check: tuple[Step, ...]  # each candidate, before production is stopped
    reference: tuple[Step, ...]  # production, while it serves
    stop_production: tuple[Step, ...]
    candidate: tuple[Step, ...]  # each candidate in production's place
    stop_candidate: tuple[Step, ...]
    back: tuple[Step, ...]  # production (or the promoted candidate) started again
    remove: tuple[Step, ...]  # each candidate's unit file, unless kept
    # production's approved text back in its file, read back: after a candidate that took
    # production's unit name, and before production starts again
    text_back: tuple[Step, ...] = ()
    # a promoted candidate under production's name: its text into that file again
    push_again: tuple[Step, ...] = ()

    def mapped(self, change: Callable[[Step], Step]) -> TrialSteps:
        return TrialSteps(
            **{
                f.name: tuple(change(s) for s in getattr(self, f.name))
                for f in dataclasses.fields(self)
            }
        )


@dataclass
class _Tried:
    candidate: TrialCandidate
    ctx: JobContext
    results: Results
    outcome: str = ""
    reason: str = ""
    figures: dict[str, Any] = field(default_factory=dict)
    pushed: bool = False
    label: str = ""
    ran: bool = False  # its steps in production's place began


@dataclass
class _Trial:
    job: Job
    steps: TrialSteps
    production: Results = field(default_factory=Results)
    tried: list[_Tried] = field(default_factory=list)
    cancel_when: str = ""
    gpus_stuck: str = ""
    text_not_back: str = ""  # production's text could not be put back after a candidate
    production_stopped: bool = False

    @property
    def halted(self) -> str:
        """Why no further candidate runs (GPUs stuck, production's text not back)."""
        return self.gpus_stuck or self.text_not_back

    def in_place(self, t: _Tried) -> bool:
        """Candidate t takes production's unit name: it runs in production's file."""
        return t.candidate.unit_name == self.job.ctx.request.unit_name


def candidate_label(candidate: TrialCandidate) -> str:
    """How the job page names a candidate: its speculative method and tokens where it has
    one ("n-gram k=5"), else its version ("vllm-kimi v3")."""
    config = spec_config(candidate.profile_version.data or {})
    if config:
        method = str(config.get("method", "speculative"))
        shown = {"ngram": "n-gram", "eagle3": "EAGLE-3", "eagle": "EAGLE", "mtp": "MTP"}.get(
            method, method
        )
        k = config.get("num_speculative_tokens")
        return f"{shown} k={k}" if k is not None else shown
    return str(candidate.profile_version)


def candidate_labels(candidates: Sequence[TrialCandidate]) -> dict[int, str]:
    """By position, each candidate's label, its unit name added where two would read
    the same (and its position where they also share the unit name: production's)."""
    plain = {c.position: candidate_label(c) for c in candidates}
    seen = list(plain.values())
    named = [(plain[c.position], c.unit_name) for c in candidates]
    labels = {}
    for c in candidates:
        label = plain[c.position]
        if named.count((label, c.unit_name)) > 1:
            label += f" (candidate {c.position}, {c.unit_name}.service)"
        elif seen.count(label) > 1:
            label += f" ({c.unit_name}.service)"
        labels[c.position] = label
    return labels


def _run(
    trial: _Trial, ctx: JobContext, steps: Sequence[Step], results: Results
) -> StepResult | None:
    """Run `steps` in `ctx`; None when all went on, else the step's result that ended
    them (the rest recorded as skipped). A cancel is seen between steps."""
    names = [s.name for s in steps]
    for index, current in enumerate(steps):
        if ctx.cancel_requested():
            skip(ctx, names[index:], "the trial was cancelled")
            trial.cancel_when = trial.cancel_when or f"before {current.name}" + _where(ctx)
            return StepResult.cancelled("cancelled")
        result = run_step(ctx, current, results)
        if not result.ok:
            skip(ctx, names[index + 1 :], "an earlier step did not succeed")
            if result.outcome is Outcome.CANCELLED:
                trial.cancel_when = trial.cancel_when or f"during {current.name}" + _where(ctx)
            return _named(current, result)
    return None


def _named(s: Step, result: StepResult) -> StepResult:
    return dataclasses.replace(result, reason=f"{s.name}: {result.reason}")


def _where(ctx: JobContext) -> str:
    if ctx.trial_position in (None, PRODUCTION):
        return " (production)"
    return f" of candidate {ctx.trial_position} ({ctx.unit})"


def _no_cancel(ctx: JobContext) -> JobContext:
    return dataclasses.replace(ctx, cancel_requested=never_cancelled)


def run_trial(job: Job, steps: TrialSteps) -> JobOutcome:
    """The trial's steps, under the host lease the runner took; how it ended."""
    trial = _Trial(job, steps)
    ctx = job.ctx = dataclasses.replace(job.ctx, trial_position=PRODUCTION)
    ended = _run(trial, ctx, steps.before, trial.production)
    if ended is not None:
        return _untouched(trial, ended, "production was not touched")
    candidates = candidates_of(ctx.request)
    labels = candidate_labels(candidates)
    trial.tried = [
        _Tried(c, candidate_context(ctx, c), Results(), label=labels[c.position])
        for c in candidates
    ]
    checked = _check_candidates(trial)
    if isinstance(checked, JobOutcome):
        return checked
    ended = _run(trial, ctx, steps.reference, trial.production)
    if ended is not None:
        return _untouched(trial, ended, "production was measured, not stopped")
    trial.production_stopped = True
    ended = _run(trial, ctx, steps.stop_production, trial.production)
    if ended is None:
        for t in checked:
            _try(trial, t)
    elif ended.outcome is not Outcome.CANCELLED:
        trial.gpus_stuck = f"production could not be stopped cleanly: {ended.reason}"
    for t in checked:
        if not t.outcome:
            why = "the trial was cancelled" if trial.cancel_when else trial.halted
            cancelled = TrialOutcome.CANCELLED if trial.cancel_when else TrialOutcome.FAILED
            _record(t, cancelled, f"not tried: {why}")
    return _finish(trial)


def _check_candidates(trial: _Trial) -> list[_Tried] | JobOutcome:
    """Every candidate checked before production is stopped: those that may run, or how
    the trial ended (cancelled, or every candidate rejected) with production untouched."""
    for t in trial.tried:
        ended = _run(trial, t.ctx, trial.steps.check, t.results)
        if ended is not None and ended.outcome is Outcome.CANCELLED:
            return _untouched(trial, ended, "before anything changed on the host")
        if ended is not None:
            _record(t, TrialOutcome.REJECTED, ended.reason)
    runnable = [t for t in trial.tried if not t.outcome]
    if runnable:
        return runnable
    reasons = "; ".join(f"{t.label}: {t.reason}" for t in trial.tried)
    return JobOutcome(
        Status.FAILED,
        f"every candidate was rejected before production was stopped ({reasons}); "
        "production was not touched",
        host_state=_host_state(trial),
    )


def _untouched(trial: _Trial, ended: StepResult, then: str) -> JobOutcome:
    """The trial ended before production was stopped."""
    if ended.outcome is Outcome.CANCELLED:
        who = cancelled_by(trial.job.ctx)
        when = trial.cancel_when or "before anything changed on the host"
        return JobOutcome(
            Status.CANCELLED,
            f"cancelled by {who} {when}, {then}",
            {"cancel": {"by": who, "when": when, "then": then}},
            host_state=_host_state(trial),
        )
    status = Status.VOID if ended.outcome is Outcome.VOID else Status.FAILED
    return JobOutcome(status, f"{ended.reason}; {then}", host_state=_host_state(trial))


def _try(trial: _Trial, t: _Tried) -> None:
    """Candidate t in production's place: its steps, then stopped whatever happened.
    Not tried (left without an outcome) once the trial is cancelled or halted. A candidate
    in production's file is followed by production's text back, whatever happened."""
    if trial.cancel_when or trial.halted:
        return
    steps = trial.steps
    t.ran = True
    ended = _run(trial, t.ctx, steps.candidate, t.results)
    t.pushed = t.results.has(Pushed)
    bench = _bench_step(t)
    if bench is not None:
        t.figures = dict(bench.result or {})
    if ended is None:
        _record(t, _verdict_outcome(t.figures), str(t.figures.get("summary") or ""))
    elif ended.outcome is Outcome.REGRESSED:
        _record(t, TrialOutcome.SLOWER, str(t.figures.get("summary") or ended.reason))
    elif ended.outcome is Outcome.CANCELLED:
        _record(t, TrialOutcome.CANCELLED, f"cancelled {trial.cancel_when}")
    else:
        _record(t, TrialOutcome.FAILED, ended.reason, evidence=_evidence(t))
    if t.pushed:
        # Stopped whatever happened (a cancel does not stop the way back to production).
        stopping = _no_cancel(t.ctx)
        ended = _run(trial, stopping, steps.stop_candidate, t.results)
        if ended is not None:
            trial.gpus_stuck = f"{t.ctx.unit} could not be stopped cleanly: {ended.reason}"
    if trial.in_place(t):  # even when its push failed half-way: the step reads first
        back = _run(trial, _no_cancel(trial.job.ctx), steps.text_back, trial.production)
        if back is not None:
            trial.text_not_back = f"PRODUCTION'S TEXT IS NOT BACK after {t.label}: {back.reason}"


def _bench_step(t: _Tried) -> JobStep | None:
    return (
        JobStep.objects.filter(
            request=t.ctx.request.pk,
            trial_position=t.candidate.position,
            name="candidate_benchmark",
        )
        .exclude(status=JobStep.Status.SKIPPED)
        .order_by("-pk")
        .first()
    )


def _verdict_outcome(figures: dict[str, Any]) -> str:
    verdict = figures.get("gate")
    if verdict == "noisy":
        return TrialOutcome.NOISY
    if verdict == "regressed":
        return TrialOutcome.SLOWER
    if verdict == "pass":  # servebench.gate.headline says "faster" beyond the threshold
        faster = "faster" in str(figures.get("summary") or "")
        return TrialOutcome.FASTER if faster else TrialOutcome.WITHIN
    return TrialOutcome.MEASURED


def _evidence(t: _Tried) -> dict[str, Any]:
    """The failed step's offending lines and reads (journal, unit state), for the page."""
    failed = (
        JobStep.objects.filter(
            request=t.ctx.request.pk,
            trial_position=t.candidate.position,
            status=JobStep.Status.FAILED,
        )
        .order_by("-pk")
        .first()
    )
    if failed is None:
        return {}
    reads = failed.reads or {}
    lines = reads.get("offending_lines") or reads.get("journal_tail") or []
    return {"step": failed.name, "lines": list(lines)[-20:]}


def _record(t: _Tried, outcome: str, reason: str, evidence: dict[str, Any] | None = None) -> None:
    t.outcome, t.reason = outcome, reason
    figures = dict(t.figures)
    if evidence:
        figures["evidence"] = evidence
    TrialCandidate.objects.filter(pk=t.candidate.pk).update(
        outcome=outcome, outcome_reason=clip_text(reason, 2000), figures=figures
    )


# --------------------------------------------------------------------------------------
# the end


def _promotable(trial: _Trial) -> _Tried | None:
    """The best candidate, if the trial was approved with a promote threshold and that
    candidate beats production by at least it on every gated metric."""
    threshold = trial.job.ctx.request.trial_promote_pct
    if threshold is None or trial.cancel_when or trial.halted:
        return None
    best: tuple[float, _Tried] | None = None
    for t in trial.tried:
        changes = t.figures.get("changes") or []
        if t.outcome != TrialOutcome.FASTER or not changes:
            continue
        worst_gain = min(-float(c["change_pct"]) for c in changes)
        if worst_gain >= threshold and (best is None or worst_gain > best[0]):
            best = (worst_gain, t)
    return best[1] if best else None


def _finish(trial: _Trial) -> JobOutcome:
    """Production back (or the promoted candidate kept running), the candidates' files
    removed unless kept, and the outcome in words."""
    job, steps = trial.job, trial.steps
    cancelled = bool(trial.cancel_when)
    back_ctx = _no_cancel(job.ctx)
    if cancelled:
        back_ctx = dataclasses.replace(back_ctx, phase=JobStep.Phase.ROLLBACK)
    promoted = _promotable(trial)
    back_failed: StepResult | None = None
    if promoted is not None:
        again = steps.push_again if trial.in_place(promoted) else ()
        promote = again + steps.back[:-1]
        back_failed = _run(trial, _no_cancel(promoted.ctx), promote, promoted.results)
        if back_failed is not None:
            promoted = None  # production comes back instead
    if promoted is None:
        in_place = any(t.ran and trial.in_place(t) for t in trial.tried)
        back = (steps.text_back if in_place else ()) + steps.back
        back_failed = _run(trial, back_ctx, back, trial.production)
    if promoted is not None:
        _record(promoted, TrialOutcome.PROMOTED, promoted.reason)
    for t in trial.tried:
        # production's own file is never removed: its text came back instead
        if t.pushed and not t.candidate.keep and t is not promoted and not trial.in_place(t):
            _run(trial, _no_cancel(t.ctx), steps.remove, Results())
    _read_back(trial)
    return _outcome(trial, promoted, back_failed)


def _read_back(trial: _Trial) -> None:
    """What runs where (`deploys.running`): every unit file the trial touched, read now."""
    ctx = trial.job.ctx
    try:
        transport = ctx.transport
        units = [(ctx.request.unit_name, ctx.path)] + [
            (t.ctx.request.unit_name, t.ctx.path) for t in trial.tried
        ]
        for name, path in dict.fromkeys(units):
            record_read(
                host=ctx.host,
                unit_name=name,
                data=transport.read_file(path),
                step="end",
                request=ctx.request,
            )
    except (TransportError, OSError):
        return
    finally:
        existing = ctx.existing_transport
        if existing is not None:
            existing.command_log.take()


def _confirm_figures(trial: _Trial) -> dict[str, Any]:
    step = (
        JobStep.objects.filter(request=trial.job.ctx.request.pk, name="confirm_benchmark")
        .order_by("-pk")
        .first()
    )
    return dict(step.result or {}) if step is not None else {}


def _outcome(trial: _Trial, promoted: _Tried | None, back_failed: StepResult | None) -> JobOutcome:
    ctx = trial.job.ctx
    verdicts = "; ".join(f"{t.label}: {_said(t)}" for t in trial.tried) or "no candidate"
    confirm = _confirm_figures(trial)
    if promoted is not None and trial.in_place(promoted):
        back = (
            f"{promoted.label} left running as production in its unit file ({ctx.unit}); "
            "production's text is not there any more"
        )
    elif promoted is not None:
        back = (
            f"{promoted.label} left running as production ({promoted.ctx.unit}); {ctx.unit} stopped"
        )
    elif back_failed is not None:
        back = f"PRODUCTION WAS NOT RESTORED: {back_failed.reason}"
    else:
        back = _production_back(confirm)
    loud = [x for x in (trial.gpus_stuck, trial.text_not_back) if x]
    if confirm.get("drifted"):
        loud.append(str(confirm.get("drift")))
    reason = f"{verdicts}; {back}" + ("".join(f"; {x}" for x in loud))
    details: dict[str, Any] = {
        "trial": {
            "candidates": [
                {
                    "position": t.candidate.position,
                    "unit": t.ctx.unit,
                    "outcome": t.outcome,
                    "said": _said(t),
                }
                for t in trial.tried
            ],
            "promoted": promoted.ctx.unit if promoted else None,
            "production_restored": promoted is None and back_failed is None,
        }
    }
    host_state = _host_state(trial)
    if trial.cancel_when:
        who = cancelled_by(ctx)
        status = Status.CANCELLED if back_failed is None else Status.ROLLBACK_FAILED
        details["cancel"] = {"by": who, "when": trial.cancel_when, "then": back}
        return JobOutcome(
            status, f"cancelled by {who} {trial.cancel_when}; {reason}", details, host_state
        )
    if back_failed is not None:
        return JobOutcome(Status.ROLLBACK_FAILED, reason, details, host_state)
    return JobOutcome(Status.SUCCEEDED, reason, details, host_state)


def _said(t: _Tried) -> str:
    """A candidate's result in words: the gate's headline against production, or what
    kept it from being measured."""
    label = TrialOutcome(t.outcome or TrialOutcome.PENDING).label.lower()
    if t.outcome in (TrialOutcome.REJECTED, TrialOutcome.FAILED, TrialOutcome.CANCELLED):
        return f"{label} ({t.reason})" if t.reason else label
    return t.reason or label


def _production_back(confirm: dict[str, Any]) -> str:
    tok_s = confirm.get("output_tok_s")
    if confirm.get("outcome") == "ok" and tok_s is not None:
        said = f"production restored at {float(tok_s):.1f} tok/s"
        if confirm.get("slower"):
            base = confirm.get("baseline_tok_s")
            said += (
                " — PRODUCTION IS SLOWER THAN ITS BASELINE"
                + (f" ({float(base):.1f} tok/s)" if base is not None else "")
                + f": {confirm.get('summary')}"
            )
        return said
    return "production restored and ready" + (
        f" (not measured: {confirm.get('reason')})" if confirm.get("reason") else ""
    )


@dataclass(frozen=True)
class TrialUnit:
    """A unit a trial acts on: its name, the text it was approved with, its role."""

    unit_name: str
    sha256: str
    role: str  # "production", "candidate 2"

    @property
    def unit(self) -> str:
        return f"{self.unit_name}.service"


def trial_units(request: DeployRequest) -> list[TrialUnit]:
    """Production, then each candidate in order."""
    return [TrialUnit(request.unit_name, request.unit_sha256, "production")] + [
        TrialUnit(c.unit_name, c.unit_sha256, f"candidate {c.position}")
        for c in candidates_of(request)
    ]


def units_now(transport: Transport, host_name: str, units: Sequence[TrialUnit]) -> str:
    """What `host_name` runs as each of `units`, read now: its state and which text its
    file is (a candidate's file that is gone: "removed"). Candidates under production's
    unit name are read with it, once: its file is one of their texts. Raises
    TransportError."""
    by_unit: dict[str, list[TrialUnit]] = {}
    for u in units:
        by_unit.setdefault(u.unit, []).append(u)
    parts = []
    for unit, sharing in by_unit.items():
        roles = [u.role for u in sharing]
        state = transport.unit_properties(unit, ("LoadState", "ActiveState", "SubState"))
        text = transport.read_file(posixpath.join(DEFAULT_UNIT_DIR, unit))
        if text is None and state.get("LoadState") == "not-found" and "production" not in roles:
            parts.append(f"{unit}: removed")
            continue
        if text is None:
            which = "no unit file"
        else:
            sha = sha256_hex(text)
            role = next((u.role for u in sharing if u.sha256 == sha), None)
            which = f"{role}'s approved text" if role else f"another text (sha256 {sha[:12]}…)"
        parts.append(
            f"{unit} ({', '.join(roles)}): {state.get('ActiveState', '?')} "
            f"({state.get('SubState', '?')}), its file is {which}"
        )
    return f"on {host_name}: " + "; ".join(parts)


def _host_state(trial: _Trial) -> str:
    """What the host runs at the end, each unit the trial touched read back."""
    ctx = trial.job.ctx
    if ctx.existing_transport is None:
        return "unchanged: the job never connected to the host"
    try:
        return units_now(ctx.transport, ctx.host.name, trial_units(ctx.request))
    except TransportError as exc:
        return f"unknown: {ctx.host.name} could not be read ({exc})"
    finally:
        existing = ctx.existing_transport
        if existing is not None:
            existing.command_log.take()


def where_it_stopped(request: DeployRequest) -> str:
    """For a trial whose worker stopped: which units its steps last started or stopped,
    from the recorded steps (what the host should run, if nothing else touched it)."""
    said = []
    names = {u.role: u.unit for u in trial_units(request)}
    steps = JobStep.objects.filter(
        request=request, name__in=("stop", "start"), trial_position__isnull=False
    ).exclude(status=JobStep.Status.SKIPPED)
    last: dict[int, JobStep] = {}
    for s in steps.order_by("pk"):
        assert s.trial_position is not None
        last[s.trial_position] = s
    for position, s in sorted(last.items()):
        role = "production" if position == PRODUCTION else f"candidate {position}"
        unit = names.get(role, role)
        if s.name == "start":
            said.append(f"{unit} ({role}) was started by the trial and not stopped since")
        else:
            said.append(f"{unit} ({role}) was stopped by the trial and not started since")
    if not last:
        return "the trial had not stopped production yet"
    return "; ".join(said)


def interrupted_host_state(
    request: DeployRequest, connect: Callable[[Any], Transport] | None = None
) -> str:
    """What an interrupted trial's page says the host runs: read on the host now where it
    can be reached, else what the trial's steps last did, saying it was not read."""
    connect = connect or transport_for
    try:
        with connect(request.host) as transport:
            return units_now(transport, request.host.name, trial_units(request)) + (
                " (read when the job was marked interrupted)"
            )
    except Exception as exc:  # any failure to read: say what the steps say
        return (
            f"not read ({type(exc).__name__}: {exc}); from the trial's steps: "
            + where_it_stopped(request)
        )


def change_words(figures: dict[str, Any]) -> list[str]:
    """Each gated metric's change against production, in the words the benchmark step
    wrote with the names a person reads (perf.step: "TPOT p50 at 1 stream 12.0% better")."""
    return [str(c["said"]) for c in figures.get("changes", []) if c.get("said")]


__all__ = [
    "PRODUCTION",
    "TrialSteps",
    "candidate_benchmark",
    "candidate_context",
    "candidate_label",
    "candidate_labels",
    "candidate_preflight",
    "change_words",
    "confirm_benchmark",
    "interrupted_host_state",
    "reference_benchmark",
    "run_trial",
    "trial_preflight",
    "trial_units",
    "units_now",
    "where_it_stopped",
]
