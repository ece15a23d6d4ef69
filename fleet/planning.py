"""A rollout's plan and its next move, as pure functions (no Django, no database).

`plan_batches` places the hosts: the canary first (batch 0), then batches of
`batch_size`. `allowed_failures` turns the budget into a number of hosts. `next_move`
decides, from every host's state, what the coordinator does now (`fleet.coordinator`
applies it with conditional UPDATEs). The rules (docs/rollouts.md):

- a host that lost its worker (interrupted) stops the rollout: interrupted;
- any failure of the canary halts (the canary is the gate for the rest);
- failures after the canary beyond the budget halt (a regression counts as one);
- while a batch runs, wait; then the next batch (after the pause), or success.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

WAITING = "waiting"
STARTED = "started"
SUCCEEDED = "succeeded"
FAILED = "failed"
REGRESSED = "regressed"
CANCELLED = "cancelled"
INTERRUPTED = "interrupted"
NOT_REACHED = "not_reached"
# Host states that count against the failure budget.
FAILURES = frozenset({FAILED, REGRESSED, CANCELLED})
ENDED = frozenset({SUCCEEDED, FAILED, REGRESSED, CANCELLED, INTERRUPTED, NOT_REACHED})


class PlanError(ValueError):
    """A plan that cannot be made; the message says which setting and why."""


def plan_batches(host_count: int, *, canary: int, batch_size: int) -> list[int]:
    """The batch of each host in order: 0 for the first `canary` hosts, then 1, 2, …
    in groups of `batch_size`."""
    if host_count < 1:
        raise PlanError("A rollout needs at least one host.")
    if canary < 1:
        raise PlanError("The canary is at least one host.")
    if canary > host_count:
        raise PlanError(f"The canary ({canary} hosts) is larger than the rollout ({host_count}).")
    if batch_size < 1:
        raise PlanError("A batch is at least one host.")
    return [0 if i < canary else 1 + (i - canary) // batch_size for i in range(host_count)]


def allowed_failures(kind: str, value: int, *, after_canary: int) -> int:
    """How many hosts after the canary may fail before the rollout halts: `value` hosts
    ("count"), or `value` % of the hosts after the canary, rounded down ("percent")."""
    if value < 0:
        raise PlanError("The failure budget cannot be negative.")
    if kind == "count":
        return value
    if kind == "percent":
        if value > 100:
            raise PlanError("A failure budget in percent is at most 100.")
        return math.floor(after_canary * value / 100)
    raise PlanError(f"Unknown failure budget kind {kind!r}: 'count' or 'percent'.")


@dataclass(frozen=True)
class HostView:
    """What `next_move` needs of a host: its batch and its state."""

    batch: int
    state: str


@dataclass(frozen=True)
class Move:
    """What to do now: "wait", "start" (batch `batch`), "halt", "interrupt" or
    "succeed"; `reason` in words for the page and the audit."""

    action: str
    batch: int = -1
    reason: str = ""


def failures_after_canary(hosts: Sequence[HostView]) -> int:
    return sum(1 for h in hosts if h.batch > 0 and h.state in FAILURES)


def next_move(hosts: Sequence[HostView], *, allowed: int) -> Move:
    """The coordinator's next move for a running rollout (see the module docstring)."""
    lost = sum(1 for h in hosts if h.state == INTERRUPTED)
    if lost:
        return Move("interrupt", reason=f"{lost} host job(s) lost their worker")
    canary_failed = sum(1 for h in hosts if h.batch == 0 and h.state in FAILURES)
    if canary_failed:
        return Move("halt", reason=f"the canary failed on {canary_failed} host(s)")
    failed = failures_after_canary(hosts)
    if failed > allowed:
        return Move(
            "halt", reason=f"{failed} host(s) failed after the canary; the budget is {allowed}"
        )
    if any(h.state == STARTED for h in hosts):
        return Move("wait", reason="a batch is running")
    waiting = sorted({h.batch for h in hosts if h.state == WAITING})
    if not waiting:
        return Move("succeed", reason=f"every host's job ended ({failed} failed, budget {allowed})")
    return Move("start", batch=waiting[0])


__all__ = [
    "ENDED",
    "FAILURES",
    "HostView",
    "Move",
    "PlanError",
    "allowed_failures",
    "failures_after_canary",
    "next_move",
    "plan_batches",
]
