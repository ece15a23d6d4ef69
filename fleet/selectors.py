"""Reads for the rollout and group pages: the distinct unit texts and who gets them, each
host's row (state, steps, the gate's figures, its baseline beside the canary's run)."""

from __future__ import annotations

import string
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db.models import QuerySet

from deploys.models import DeployRequest, Host, JobStep
from fleet import planning
from fleet.coordinator import allowed
from fleet.models import HostGroup, Rollout, RolloutHost
from perf.models import Baseline, BenchRun


@dataclass
class LintGroup:
    """Hosts that get one text and were linted for the same versions, with the same
    finding codes."""

    vllm_version: str
    systemd_version: int | None
    findings: list[dict[str, Any]]
    hosts: list[str] = field(default_factory=list)


@dataclass
class TextGroup:
    """One distinct unit text of a rollout: its label (A, B, …), hash, text and hosts."""

    label: str
    sha256: str
    text: str
    hosts: list[str] = field(default_factory=list)
    lints: list[LintGroup] = field(default_factory=list)


def text_groups(rollout: Rollout) -> list[TextGroup]:
    """The distinct texts, the most common first ("7 hosts get text A, 1 host gets text
    B"); within each, the hosts by the versions they were linted for and their findings
    (what a host's older vLLM makes the linter say)."""
    by_sha: dict[str, list[RolloutHost]] = defaultdict(list)
    for row in rollout.hosts.select_related("host").order_by("position"):
        by_sha[row.unit_sha256].append(row)
    ordered = sorted(by_sha.items(), key=lambda item: (-len(item[1]), item[1][0].position))
    groups = []
    for index, (sha, rows) in enumerate(ordered):
        label = string.ascii_uppercase[index] if index < 26 else f"#{index + 1}"
        group = TextGroup(label, sha, rows[0].unit_text, [r.host.name for r in rows])
        lints: dict[tuple[str, int | None, tuple[str, ...]], LintGroup] = {}
        for row in rows:
            codes = tuple(sorted(f"{f['severity']}:{f['code']}" for f in row.lint_findings))
            key = (row.lint_vllm_version, row.lint_systemd_version, codes)
            lint = lints.setdefault(
                key, LintGroup(row.lint_vllm_version, row.lint_systemd_version, row.lint_findings)
            )
            lint.hosts.append(row.host.name)
        group.lints = sorted(lints.values(), key=lambda g: -len(g.hosts))
        groups.append(group)
    return groups


@dataclass
class HostRow:
    """One row of the rollout page."""

    row: RolloutHost
    request: DeployRequest | None
    steps: list[JobStep]
    gate: dict[str, Any]
    baseline: BenchRun | None
    text_label: str


def host_rows(rollout: Rollout) -> list[HostRow]:
    labels = {g.sha256: g.label for g in text_groups(rollout)}
    rows = list(
        rollout.hosts.select_related("host", "request", "request__decided_by").order_by("position")
    )
    request_ids = [r.request_id for r in rows if r.request_id]
    steps: dict[int, list[JobStep]] = defaultdict(list)
    for step in JobStep.objects.filter(request_id__in=request_ids).order_by("started_at", "pk"):
        steps[step.request_id].append(step)
    baselines = {
        b.host_id: b.run
        for b in Baseline.objects.filter(
            profile_id=rollout.profile_version.profile_id, host__in=[r.host_id for r in rows]
        ).select_related("run")
    }
    shown = []
    for row in rows:
        mine = steps.get(row.request_id or 0, [])
        bench = [s for s in mine if s.name == "benchmark" and s.phase == JobStep.Phase.MAIN]
        shown.append(
            HostRow(
                row=row,
                request=row.request,
                steps=[s for s in mine if s.phase == JobStep.Phase.MAIN],
                gate=bench[-1].result if bench else {},
                baseline=baselines.get(row.host_id),
                text_label=labels.get(row.unit_sha256, "?"),
            )
        )
    return shown


@dataclass(frozen=True)
class Verdict:
    """The rollout's overall verdict in words, and its counts."""

    words: str
    succeeded: int
    failed: int
    allowed: int
    not_reached: int


def verdict(rollout: Rollout) -> Verdict:
    states = list(rollout.hosts.values_list("batch", "state"))
    views = [planning.HostView(b, s) for b, s in states]
    ok = sum(1 for _, s in states if s == RolloutHost.State.SUCCEEDED)
    failed = sum(1 for _, s in states if s in planning.FAILURES)
    skipped = sum(1 for _, s in states if s == RolloutHost.State.NOT_REACHED)
    budget = allowed(rollout)
    after = planning.failures_after_canary(views)
    counted: dict[str, str] = {
        Rollout.Status.PENDING: "waiting for approval",
        Rollout.Status.RUNNING: f"running: {ok} of {len(states)} hosts deployed",
        Rollout.Status.PAUSED: f"paused: {ok} of {len(states)} hosts deployed",
        Rollout.Status.SUCCEEDED: f"succeeded: {ok} of {len(states)} hosts deployed",
    }
    words = counted.get(
        str(rollout.status), f"{rollout.get_status_display().lower()}: {rollout.status_reason}"
    )
    if rollout.status not in (Rollout.Status.PENDING,):
        words += f"; {after} of {budget} allowed failures after the canary used"
    return Verdict(words, ok, failed, budget, skipped)


def rollout_list() -> QuerySet[Rollout]:
    return Rollout.objects.select_related("profile_version__profile", "requested_by", "group")


def groups_of_host(host: Host) -> QuerySet[HostGroup]:
    return host.host_groups.order_by("name")


def group_list() -> QuerySet[HostGroup]:
    return HostGroup.objects.prefetch_related("hosts").order_by("name")


def canary_run(rollout: Rollout) -> BenchRun | None:
    """The benchmark run of the (first) canary's job, if it measured."""
    canary = rollout.hosts.filter(batch=0, request__isnull=False).order_by("position").first()
    if canary is None:
        return None
    return BenchRun.objects.filter(request_id=canary.request_id).order_by("-pk").first()


__all__ = [
    "HostRow",
    "LintGroup",
    "TextGroup",
    "Verdict",
    "canary_run",
    "group_list",
    "groups_of_host",
    "host_rows",
    "rollout_list",
    "text_groups",
    "verdict",
]
