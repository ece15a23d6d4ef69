"""The pipelines' data flow (deploys/jobs/flow.py): every step is given exactly the earlier
results it declares, every need of every pipeline is provided by an earlier step, and the
architecture document's table of needs and provides is the one the code declares.

A new pipeline is checked by adding it to `deploys.jobs.pipelines.CHECKED`."""

from __future__ import annotations

import dataclasses
import inspect
import re
import typing
from pathlib import Path
from typing import Any, cast

import pytest

from deploys.jobs import pipelines
from deploys.jobs.context import JobContext
from deploys.jobs.flow import Guard, MissingResult, Results, Step, call, step, unmet_needs
from deploys.jobs.pipelines import CHECKED, PIPELINES, ROLLBACK, ROLLBACK_STARTS_FROM, Steps
from deploys.jobs.recorder import Recorder
from deploys.jobs.results import Found, Preflighted, Pushed, Started, Stopped, Watched
from deploys.jobs.steps import Outcome, StepResult
from deploys.models import DeployRequest
from hostops.gpu_clean import ServiceIdentity

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"
TABLE_START = "<!-- needs and provides: generated from deploys.jobs.pipelines -->"
TABLE_END = "<!-- end of the generated table -->"
# The steps do not read the context in these tests: a stand-in object is enough.
NO_CONTEXT = cast(JobContext, object())


def every_step() -> list[Step]:
    """Each distinct step of the checked pipelines (by name, its first appearance)."""
    seen: dict[str, Step] = {}
    for steps, _ in CHECKED.values():
        for s in steps:
            seen.setdefault(s.name, s)
    return list(seen.values())


# --------------------------------------------------------------------------------------
# the pipelines


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_every_need_of_the_pipeline_is_provided_by_an_earlier_step(name: str) -> None:
    steps, given = CHECKED[name]
    assert unmet_needs(steps, given) == []


def test_every_pipeline_a_request_runs_and_the_rollback_are_checked() -> None:
    checked = {id(steps) for steps, _ in CHECKED.values()}
    assert all(id(steps) in checked for steps in PIPELINES.values())
    assert id(ROLLBACK) in checked


@pytest.mark.parametrize("kind", [DeployRequest.Kind.DEPLOY, DeployRequest.Kind.ROLLBACK])
def test_a_rollback_finds_what_it_starts_from_as_soon_as_it_could_be_asked_for(
    kind: str,
) -> None:
    """A rollback is possible once the unit file changed (Pushed) or the service was
    stopped (Stopped): by then the main pipeline has provided what the rollback needs."""
    steps = PIPELINES[kind]
    first = next(i for i, s in enumerate(steps) if s.provides in (Pushed, Stopped))
    provided = {s.provides for s in steps[: first + 1]}
    assert set(ROLLBACK_STARTS_FROM) <= provided


def test_the_check_names_each_step_whose_need_no_earlier_step_provides() -> None:
    out_of_order: Steps = (
        pipelines.PREFLIGHT,
        pipelines.READINESS,
        pipelines.START,
        pipelines.JOURNAL_CHECK,
    )
    assert unmet_needs(out_of_order) == [
        "readiness needs Started, which no earlier step provides",
        "readiness needs Watched, which no earlier step provides",
    ]
    # the rollback on its own, without what it takes from the failed phase
    assert unmet_needs(ROLLBACK) == [
        "restore needs Preflighted, which no earlier step provides",
        "restore needs Pushed, which no earlier step provides",
    ]
    # a guard's need counts: the rollback's stop without the restore before it
    assert unmet_needs(ROLLBACK[1:], ROLLBACK_STARTS_FROM)[0] == (
        "stop needs Restored, which no earlier step provides"
    )


@pytest.mark.parametrize("s", every_step(), ids=lambda s: s.name)
def test_each_step_function_takes_the_result_types_it_declares(s: Step) -> None:
    """mypy checks this where the steps are declared (`flow.step`); this says it again
    at run time, for a declaration mypy cannot see through."""
    hints = typing.get_type_hints(s.run)
    params = list(inspect.signature(s.run).parameters)
    assert [hints[p] for p in params[:2]] == [JobContext, Recorder]
    assert tuple(hints[p] for p in params[2:]) == s.needs


# --------------------------------------------------------------------------------------
# how a step is given its needs


def recorded(run: Any, needs: tuple[type, ...] = (), provides: type | None = None) -> Step:
    return Step("probe", run, needs, provides)


def test_a_step_is_given_the_latest_result_of_each_type_it_needs() -> None:
    given: list[Any] = []

    def probe(ctx: JobContext, rec: Recorder, found: Found, started: Started) -> StepResult:
        given.extend([found, started])
        return StepResult.success()

    earlier, later = Found(None), Preflighted(None, {}, was_active=True)
    results = Results([earlier, Started("c1", 1.0, 0), later, Started("c2", 2.0, 1)])
    call(recorded(probe, (Found, Started)), NO_CONTEXT, Recorder(), results)
    assert given == [later, Started("c2", 2.0, 1)], "the latest, a subclass included"


def test_a_guard_that_does_not_hold_skips_the_step_without_looking_up_its_needs() -> None:
    def never(ctx: JobContext, rec: Recorder, watched: Watched) -> StepResult:
        raise AssertionError("a skipped step is not run")

    guarded = recorded(never, (Watched,)).only_if(
        Guard(Preflighted, lambda p: p.was_active, "it did not run before")
    )
    results = Results([Preflighted(None, {}, was_active=False)])
    result = call(guarded, NO_CONTEXT, Recorder(), results)
    assert (result.outcome, result.reason) == (Outcome.SKIPPED, "it did not run before")


def test_a_need_that_no_step_provided_fails_naming_the_step_and_the_type() -> None:
    probe = step("gpu_clean", lambda ctx, rec, stopped: StepResult.success(), (Stopped,))
    with pytest.raises(MissingResult, match="gpu_clean needs Stopped, which no earlier step"):
        call(probe, NO_CONTEXT, Recorder(), Results())


def test_a_result_of_another_type_than_declared_is_refused() -> None:
    def wrong(ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(Started("", 0.0, 0))
        return StepResult.success()

    with pytest.raises(TypeError, match="probe provided a Started; it declares Stopped"):
        call(recorded(wrong, provides=Stopped), NO_CONTEXT, Recorder(), Results())


def test_what_a_step_provided_before_it_raised_is_kept_for_the_rollback() -> None:
    """stop provides the service's identity before `systemctl stop`: a connection lost
    during the stop still leaves the job knowing the service may have been stopped."""
    stopped = Stopped(ServiceIdentity(unit="vllm-a.service"))

    def stop_then_lose_the_host(ctx: JobContext, rec: Recorder) -> StepResult:
        rec.provide(stopped)
        raise ConnectionResetError("the host went away")

    results = Results()
    with pytest.raises(ConnectionResetError):
        call(recorded(stop_then_lose_the_host, provides=Stopped), NO_CONTEXT, Recorder(), results)
    assert results.latest(Stopped) is stopped
    assert pipelines.can_roll_back(DeployRequest.Kind.DEPLOY, results)


def test_a_rollback_starts_from_what_the_failed_phase_found_and_nothing_else() -> None:
    before = Preflighted(None, {}, was_active=True)
    watched = Watched("c", ("ready",), healthy=True)
    main = Results([before, watched, Stopped(ServiceIdentity())])
    rollback = main.carry(*ROLLBACK_STARTS_FROM)
    assert rollback.latest(Preflighted) is before
    assert rollback.latest(Watched) is None, "the rollback's own watch says if it is ready"
    assert rollback.latest(Stopped) is None


# --------------------------------------------------------------------------------------
# the architecture document


def _names(types: tuple[type, ...]) -> str:
    return ", ".join(f"`{t.__name__}`" for t in types) or "—"


def _provides(t: type | None) -> str:
    if t is None:
        return "—"
    fields = ", ".join(f.name for f in dataclasses.fields(t)) if dataclasses.is_dataclass(t) else ""
    return f"`{t.__name__}` ({fields})" if fields else f"`{t.__name__}`"


def needs_table() -> str:
    """The table docs/architecture.md shows: each step, what it needs, what it provides,
    and when the rollback skips it."""
    guards = {s.name: s.guards for s in ROLLBACK}
    rows = [
        "| step | needs | provides | in the rollback, skipped (from `Restored`) when |",
        "|---|---|---|---|",
    ]
    for s in every_step():
        skipped = "; ".join(g.otherwise for g in guards.get(s.name, ()))
        rows.append(f"| {s.name} | {_names(s.needs)} | {_provides(s.provides)} | {skipped} |")
    starts = _names(ROLLBACK_STARTS_FROM)
    rows.append("")
    rows.append(f"The rollback starts from {starts} of the phase that failed.")
    return "\n".join(rows)


def test_the_architecture_doc_shows_what_each_step_needs_and_provides() -> None:
    text = ARCHITECTURE.read_text()
    found = re.search(re.escape(TABLE_START) + r"\n(.*?)\n" + re.escape(TABLE_END), text, re.S)
    assert found, f"docs/architecture.md lacks the block {TABLE_START} … {TABLE_END}"
    assert found.group(1) == needs_table(), "replace the block with:\n" + needs_table()
