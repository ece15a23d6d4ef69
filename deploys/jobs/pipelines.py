"""Which steps a job runs, by request kind, and the rollback that follows a failure; what
each step needs from the earlier ones and what it provides (`deploys.jobs.flow`).

deploy / rollback-to-version: preflight → vLLM check → push → daemon-reload → stop →
GPU-clean → start → journal check → readiness → benchmark (deploys only);
restart: the same without push and daemon-reload; remove: preflight → stop → GPU-clean →
remove; trial: the parts of `TRIAL`, which `deploys.jobs.trial` runs in turn per
unit (production_text_back after a candidate that took production's unit name). A
failure or a cancel once the unit file or the service was touched runs ROLLBACK
(when the profile allows it): put the previous unit back, then — if the service ran before the job —
the same stop → GPU-clean → start → journal → readiness path for it. The rollback starts
from what preflight found and what push replaced (ROLLBACK_STARTS_FROM), nothing else.
"""

from __future__ import annotations

from deploys.jobs.flow import Guard, Results, Step, step
from deploys.jobs.results import (
    Found,
    Preflighted,
    Pushed,
    Restored,
    Started,
    Stopped,
    Watched,
)
from deploys.jobs.service_steps import (
    benchmark,
    gpu_clean,
    journal_check,
    readiness,
    start,
    stop,
    vllm_check,
)
from deploys.jobs.steps import daemon_reload, preflight, push
from deploys.jobs.text_back import production_text_back
from deploys.jobs.trial import (
    TrialSteps,
    candidate_benchmark,
    candidate_preflight,
    confirm_benchmark,
    reference_benchmark,
    trial_preflight,
)
from deploys.jobs.unit_steps import remove_unit, restore_previous
from deploys.models import DeployRequest

Steps = tuple[Step, ...]
Kind = DeployRequest.Kind

PREFLIGHT = step("preflight", preflight, provides=Preflighted)
VLLM_CHECK = step("vllm_check", vllm_check, (Preflighted,))
PUSH = step("push", push, provides=Pushed)
DAEMON_RELOAD = step("daemon_reload", daemon_reload, (Pushed,))
STOP = step("stop", stop, provides=Stopped)
GPU_CLEAN = step("gpu_clean", gpu_clean, (Stopped,))
START = step("start", start, provides=Started)
JOURNAL_CHECK = step("journal_check", journal_check, (Started, Found), provides=Watched)
READINESS = step("readiness", readiness, (Started, Watched, Found), provides=Watched)
BENCHMARK = step("benchmark", benchmark, (Found,))
RESTORE = step("restore", restore_previous, (Preflighted, Pushed), provides=Restored)
REMOVE = step("remove", remove_unit)

RESTART_PATH: Steps = (STOP, GPU_CLEAN, START, JOURNAL_CHECK, READINESS)
DEPLOY: Steps = (PREFLIGHT, VLLM_CHECK, PUSH, DAEMON_RELOAD, *RESTART_PATH, BENCHMARK)
PIPELINES: dict[str, Steps] = {
    Kind.DEPLOY: DEPLOY,
    Kind.ROLLBACK: DEPLOY,
    Kind.RESTART: (PREFLIGHT, VLLM_CHECK, *RESTART_PATH),
    Kind.REMOVE: (PREFLIGHT, STOP, GPU_CLEAN, REMOVE),
}
# A trial (deploys.jobs.trial): each part runs on one unit's view of the trial, some
# parts once per candidate; each is checked from what its unit's earlier parts provided.
TRIAL_PREFLIGHT = step("trial_preflight", trial_preflight, provides=Preflighted)
CANDIDATE_PREFLIGHT = step("candidate_preflight", candidate_preflight, provides=Preflighted)
REFERENCE_BENCHMARK = step("reference_benchmark", reference_benchmark, (Found,))
CANDIDATE_BENCHMARK = step("candidate_benchmark", candidate_benchmark, (Found,))
CONFIRM_BENCHMARK = step("confirm_benchmark", confirm_benchmark, (Found,))
PRODUCTION_TEXT_BACK = step("production_text_back", production_text_back)
TRIAL = TrialSteps(
    before=(TRIAL_PREFLIGHT,),
    check=(CANDIDATE_PREFLIGHT, VLLM_CHECK),
    reference=(REFERENCE_BENCHMARK,),
    stop_production=(STOP, GPU_CLEAN),
    candidate=(PUSH, DAEMON_RELOAD, START, JOURNAL_CHECK, READINESS, CANDIDATE_BENCHMARK),
    stop_candidate=(STOP, GPU_CLEAN),
    back=(GPU_CLEAN, START, JOURNAL_CHECK, READINESS, CONFIRM_BENCHMARK),
    remove=(REMOVE,),
    text_back=(PRODUCTION_TEXT_BACK,),
    push_again=(PUSH, DAEMON_RELOAD),
)
# Each part of a trial, with what its unit's earlier parts provide: production's parts
# follow one another (before → reference → stop_production → back), a candidate's follow
# its check (check → candidate → stop_candidate).
TRIAL_CHECKED: dict[str, tuple[Steps, tuple[type, ...]]] = {
    "trial: production before anything is stopped": (TRIAL.before + TRIAL.reference, ()),
    "trial: each candidate's check": (TRIAL.check, ()),
    "trial: production stopped and back": (
        TRIAL.stop_production + TRIAL.text_back + TRIAL.back,
        (Preflighted,),
    ),
    "trial: production's text back after a candidate in its unit": (TRIAL.text_back, ()),
    # after its own steps and stop_candidate, which stopped it
    "trial: a promoted candidate in production's unit": (
        TRIAL.push_again + TRIAL.back[:-1],
        (Preflighted, Stopped),
    ),
    "trial: each candidate in production's place": (
        TRIAL.candidate + TRIAL.stop_candidate,
        (Preflighted,),
    ),
    "trial: a candidate's unit file removed": (TRIAL.remove, ()),
}

# Steps after which nothing on the host has changed yet: a job interrupted there may run
# again from the start (deploys.jobs.runner).
HOST_UNTOUCHED = frozenset(
    {
        "",
        "host_lock",
        "preflight",
        "vllm_check",
        "trial_preflight",
        "candidate_preflight",
        "reference_benchmark",
    }
)


def _if_restarting(s: Step) -> Step:
    return s.only_if(
        Guard(
            Restored,
            lambda restored: restored.restart_previous,
            "the service did not run before this job: left stopped",
        )
    )


def _unless_removed(s: Step) -> Step:
    return s.only_if(
        Guard(
            Restored,
            lambda restored: not restored.unit_gone,
            "the new unit was removed: nothing left to stop",
        )
    )


# What the rollback takes from the phase that failed (what the service was, what push
# replaced); the service steps of the rollback provide their own results.
ROLLBACK_STARTS_FROM: tuple[type, ...] = (Preflighted, Pushed)
ROLLBACK: Steps = (
    RESTORE,
    _unless_removed(STOP),
    _if_restarting(GPU_CLEAN),
    _if_restarting(START),
    _if_restarting(JOURNAL_CHECK),
    _if_restarting(READINESS),
)

# Every pipeline and what it starts from: tests/deploys/test_pipeline_flow.py checks that
# each need of each step is met by an earlier step. A new pipeline is added here.
CHECKED: dict[str, tuple[Steps, tuple[type, ...]]] = {
    **{f"{kind} request": (steps, ()) for kind, steps in PIPELINES.items()},
    "rollback after a failure": (ROLLBACK, ROLLBACK_STARTS_FROM),
    **TRIAL_CHECKED,
}


def host_touched(results: Results) -> bool:
    """Did the job change anything on the host: the unit file, or the service (stopped)."""
    pushed = results.latest(Pushed)
    changed = pushed is not None and pushed.result.changed
    return changed or results.has(Stopped)


def can_roll_back(kind: str, results: Results) -> bool:
    """Is there anything to put back: a deploy or rollback request that changed the unit
    file or stopped the service. (A failure or a cancel then runs ROLLBACK.)"""
    return kind in (Kind.DEPLOY, Kind.ROLLBACK) and host_touched(results)


__all__ = [
    "CHECKED",
    "HOST_UNTOUCHED",
    "PIPELINES",
    "ROLLBACK",
    "ROLLBACK_STARTS_FROM",
    "TRIAL",
    "Steps",
    "can_roll_back",
    "host_touched",
]
