"""How results flow from step to step: each step declares what it needs and provides.

A step is a function `run(ctx, rec, *needs) -> StepResult`: the job's context
(`deploys.jobs.context.JobContext`, frozen), the step's recorder
(`deploys.jobs.recorder.Recorder`), then one argument per type in `needs`, the latest
result of that type an earlier step provided (`deploys.jobs.results`). It provides at most
one result, of its declared `provides` type, through `rec.provide`. A `Guard` skips the step
unless a condition on an earlier result holds; a skipped step's needs are not looked up.

`unmet_needs` checks a pipeline before anything runs: every need met by an earlier step.
`step()` checks, for mypy, that the declared needs are the types the function takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import StepResult

T = TypeVar("T")
A = TypeVar("A")
B = TypeVar("B")
C = TypeVar("C")


@dataclass(frozen=True)
class Guard(Generic[T]):
    """Run the step only when `holds` is true of the latest `T`; else skip it, saying
    `otherwise`."""

    needs: type[T]
    holds: Callable[[T], bool]
    otherwise: str


@dataclass(frozen=True)
class Step:
    """One step of a pipeline: its name (the JobStep's), its function, the result types it
    is given, the one it may provide, and the guards it runs under."""

    name: str
    run: Callable[..., StepResult]
    needs: tuple[type, ...] = ()
    provides: type | None = None
    guards: tuple[Guard[Any], ...] = ()

    def only_if(self, guard: Guard[Any]) -> Step:
        return dataclasses.replace(self, guards=(*self.guards, guard))


@overload
def step(
    name: str,
    run: Callable[[JobContext, Recorder], StepResult],
    *,
    provides: type | None = None,
) -> Step: ...
@overload
def step(
    name: str,
    run: Callable[[JobContext, Recorder, A], StepResult],
    needs: tuple[type[A]],
    *,
    provides: type | None = None,
) -> Step: ...
@overload
def step(
    name: str,
    run: Callable[[JobContext, Recorder, A, B], StepResult],
    needs: tuple[type[A], type[B]],
    *,
    provides: type | None = None,
) -> Step: ...
@overload
def step(
    name: str,
    run: Callable[[JobContext, Recorder, A, B, C], StepResult],
    needs: tuple[type[A], type[B], type[C]],
    *,
    provides: type | None = None,
) -> Step: ...
def step(
    name: str,
    run: Callable[..., StepResult],
    needs: tuple[type, ...] = (),
    *,
    provides: type | None = None,
) -> Step:
    """A `Step` whose `needs` mypy checks against the types `run` takes after (ctx, rec)."""
    return Step(name, run, tuple(needs), provides)


class MissingResult(Exception):
    """A step needs a result no earlier step of this job provided (a pipeline that
    `unmet_needs` would have refused, or a providing step that was skipped)."""


class Results:
    """The typed results a job's steps provided, in order; a need is met by the latest
    result of its type (or of a subclass)."""

    def __init__(self, carried: Iterable[object] = ()) -> None:
        self._items: list[object] = list(carried)

    def add(self, result: object) -> None:
        self._items.append(result)

    def latest(self, kind: type[T]) -> T | None:
        for item in reversed(self._items):
            if isinstance(item, kind):
                return item
        return None

    def has(self, kind: type) -> bool:
        return self.latest(kind) is not None

    def carry(self, *kinds: type) -> Results:
        """A new store starting from the latest result of each of `kinds` (what a rollback
        takes from the phase that failed)."""
        return Results(found for kind in kinds if (found := self.latest(kind)) is not None)


def _need(step: Step, kind: type[T], results: Results) -> T:
    found = results.latest(kind)
    if found is None:
        raise MissingResult(
            f"{step.name} needs {kind.__name__}, which no earlier step of this job provided"
        )
    return found


def call(step: Step, ctx: JobContext, rec: Recorder, results: Results) -> StepResult:
    """Run `step` with exactly the results it needs (skipped when a guard does not hold),
    then keep what it provided, also when it raised."""
    try:
        for guard in step.guards:
            if not guard.holds(_need(step, guard.needs, results)):
                return StepResult.skipped(guard.otherwise)
        return step.run(ctx, rec, *(_need(step, kind, results) for kind in step.needs))
    finally:
        _keep(step, rec, results)


def _keep(step: Step, rec: Recorder, results: Results) -> None:
    provided = rec.provided
    if provided is None:
        return
    if step.provides is None or not isinstance(provided, step.provides):
        declared = step.provides.__name__ if step.provides else "nothing"
        raise TypeError(f"{step.name} provided a {type(provided).__name__}; it declares {declared}")
    results.add(provided)


def unmet_needs(steps: Sequence[Step], given: Iterable[type] = ()) -> list[str]:
    """Each need (of a step or of its guards) that neither `given` nor an earlier step
    provides, in words; [] for a pipeline whose data flow holds."""
    provided = list(given)
    problems = []
    for s in steps:
        for kind in (*(g.needs for g in s.guards), *s.needs):
            if not any(issubclass(p, kind) for p in provided):
                problems.append(f"{s.name} needs {kind.__name__}, which no earlier step provides")
        if s.provides is not None:
            provided.append(s.provides)
    return problems


__all__ = ["Guard", "MissingResult", "Results", "Step", "call", "step", "unmet_needs"]
