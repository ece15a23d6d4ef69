"""Trials, any number, one after another on one host, with candidates that are slower,
faster, crash while loading or are rejected by the host's vLLM, and cancels during a
candidate's readiness: after each, production runs alone, its file is its known text, the
candidates' files are gone unless kept, and what runs where (`deploys.running`) says what
the host's files say."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from deploys.jobs import benchmark as benchmark_hook
from deploys.models import DeployRequest, JobStep
from deploys.running import unit_on_host
from deploys.services.trial_requests import Candidate
from deploys.services.unit_requests import deploy_job_cancel
from hostops.channel.push import sha256_hex
from tests.deploys.helpers import make_users, unique
from tests.deploys.trial_support import TrialSide, make_trial_side, use_trial_side

KINDS = ("slower", "faster", "crash", "rejected")
Status = DeployRequest.Status
MONKEYPATCH: list[pytest.MonkeyPatch] = []


class Trials(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        requester, approver = make_users()
        self.side: TrialSide = make_trial_side(requester, approver, unique("vllm-prod"))
        use_trial_side(MONKEYPATCH[0], self.side)
        self.pending: list[tuple[Any, str, bool]] = []  # (version, kind, keep)
        self.kept: set[str] = set()
        self.seen_units: set[str] = set()

    @precondition(lambda self: len(self.pending) < 3)
    @rule(kind=st.sampled_from(KINDS), keep=st.booleans())
    def a_candidate(self, kind: str, keep: bool) -> None:
        name = unique("vllm-cand")
        version = self.side.candidate(name)
        unit = f"{name}.service"
        script = self.side.script
        if kind == "rejected":
            script.rejected.add(unit)
        elif kind == "crash":
            script.crash.add(unit)
        else:
            script.change_pct[unit] = -14.7 if kind == "slower" else 12.0
        self.pending.append((version, kind, keep))

    @precondition(lambda self: bool(self.pending))
    @rule(cancel=st.one_of(st.none(), st.integers(0, 2)))
    def the_trial_runs(self, cancel: int | None) -> None:
        side = side_ = self.side
        script = side.script
        script.cancel_at, script.on_cancel = None, None
        if cancel is not None and cancel < len(self.pending):
            unit = f"{self.pending[cancel][0].profile.name}.service"
            script.cancel_at = (unit, "readiness")
            script.on_cancel = lambda req: deploy_job_cancel(
                request=DeployRequest.objects.get(pk=req.pk), user=side_.approver
            )
        request = side.request(*[Candidate(v, keep=keep) for v, _, keep in self.pending])
        done = side.run(request)
        assert done.status in (Status.SUCCEEDED, Status.CANCELLED, Status.FAILED), (
            done.status,
            done.status_reason,
        )
        for candidate in done.candidates.all():
            self.seen_units.add(candidate.unit_name)
            pushed = JobStep.objects.filter(
                request=done, trial_position=candidate.position, name="push", status="succeeded"
            ).exists()
            if candidate.keep and pushed:
                self.kept.add(candidate.unit_name)
        self.pending = []

    @invariant()
    def production_runs_alone_as_its_known_text(self) -> None:
        side = self.side
        assert side.active() == {f"{side.production_unit}.service"}
        assert side.file(side.production_unit) == side.production.unit_text.encode()

    @invariant()
    def candidates_files_are_gone_unless_kept(self) -> None:
        for unit in self.seen_units:
            on_disk = self.side.file(unit)
            if unit in self.kept:
                assert on_disk is not None, unit
            else:
                assert on_disk is None, unit

    @invariant()
    def what_runs_where_matches_the_hosts_files(self) -> None:
        side = self.side
        for unit in {side.production_unit, *self.seen_units}:
            known = unit_on_host(host=side.host, unit_name=unit)
            on_disk = side.file(unit)
            if known is None:
                assert on_disk is None, unit
                continue
            assert known.seen.sha256 == ("" if on_disk is None else sha256_hex(on_disk)), unit
        production = unit_on_host(host=side.host, unit_name=side.production_unit)
        assert production is not None and side.production in production.text.versions


@pytest.mark.django_db(transaction=True)
def test_after_any_trials_production_runs_and_what_runs_where_matches_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before = benchmark_hook.registered()
    MONKEYPATCH[:] = [monkeypatch]
    try:
        run_state_machine_as_test(
            Trials,
            settings=settings(
                max_examples=5,
                stateful_step_count=6,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow],
            ),
        )
    finally:
        benchmark_hook.register(before)
