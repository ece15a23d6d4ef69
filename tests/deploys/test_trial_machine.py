"""Trials, any number, one after another on one host, with candidates that are slower,
faster, crash while loading or are rejected by the host's vLLM, some under production's
own unit name (one much faster is promoted there), and cancels during a candidate's
readiness: after each, production runs alone, its file is its known text (production's,
or the promoted candidate's), the candidates' files are gone unless kept, and what runs
where (`deploys.running`) says what the host's files say."""

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
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.running import unit_on_host
from deploys.services.trial_requests import Candidate
from deploys.services.unit_requests import deploy_job_cancel
from hostops.channel.push import sha256_hex
from tests.deploys.helpers import make_users, unique
from tests.deploys.trial_support import TrialSide, make_trial_side, use_trial_side

KINDS = ("slower", "faster", "crash", "rejected")
CHANGE = {"slower": -14.7, "faster": 12.0, "much faster": 30.0}
PROMOTE_AT = 20.0  # only a "much faster" candidate beats it
Status = DeployRequest.Status
MONKEYPATCH: list[pytest.MonkeyPatch] = []


class Trials(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        requester, approver = make_users()
        self.side: TrialSide = make_trial_side(requester, approver, unique("vllm-prod"))
        use_trial_side(MONKEYPATCH[0], self.side)
        # (version, kind, keep, unit name: "" for its own)
        self.pending: list[tuple[Any, str, bool, str]] = []
        self.kept: set[str] = set()
        self.seen_units: set[str] = set()
        self.production_text = self.side.production.unit_text.encode()
        self.promoted = False  # production's file is a promoted candidate's text

    @precondition(lambda self: len(self.pending) < 3)
    @rule(kind=st.sampled_from(KINDS), keep=st.booleans())
    def a_candidate(self, kind: str, keep: bool) -> None:
        self.pending.append((self.side.candidate(unique("vllm-cand")), kind, keep, ""))

    @precondition(lambda self: len(self.pending) < 3)
    @rule(kind=st.sampled_from((*KINDS, "much faster")), keep=st.booleans())
    def a_candidate_in_productions_unit(self, kind: str, keep: bool) -> None:
        version = self.side.candidate(unique("vllm-cand"))
        self.pending.append((version, kind, keep, self.side.production_unit))

    def _script(self) -> None:
        """What happens to each pending candidate, by its role ("candidate 2"): a unit
        name production's and another candidate's share says nothing of which one runs."""
        script = self.side.script
        script.rejected, script.crash, script.change_pct = set(), set(), {}
        for position, (_, kind, _, _) in enumerate(self.pending, start=1):
            role = f"candidate {position}"
            if kind == "rejected":
                script.rejected.add(role)
            elif kind == "crash":
                script.crash.add(role)
            else:
                script.change_pct[role] = CHANGE[kind]

    @precondition(lambda self: bool(self.pending))
    @rule(cancel=st.one_of(st.none(), st.integers(0, 2)))
    def the_trial_runs(self, cancel: int | None) -> None:
        side = side_ = self.side
        script = side.script
        script.cancel_at, script.on_cancel = None, None
        self._script()
        if cancel is not None and cancel < len(self.pending):
            script.cancel_at = (f"candidate {cancel + 1}", "readiness")
            script.on_cancel = lambda req: deploy_job_cancel(
                request=DeployRequest.objects.get(pk=req.pk), user=side_.approver
            )
        promote = any(kind == "much faster" for _, kind, _, _ in self.pending)
        request = side.request(
            *[Candidate(v, unit_name=name, keep=keep) for v, _, keep, name in self.pending],
            promote_threshold=PROMOTE_AT if promote else None,
        )
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
        promoted = done.candidates.filter(outcome=TrialCandidate.Outcome.PROMOTED).first()
        if promoted is not None:  # only one under production's name beats PROMOTE_AT
            assert promoted.unit_name == side.production_unit
            self.production_text = promoted.unit_text.encode()
            side.production = promoted.profile_version
            self.promoted = True
        self.pending = []

    @invariant()
    def production_runs_alone_as_its_known_text(self) -> None:
        side = self.side
        assert side.active() == {f"{side.production_unit}.service"}
        assert side.file(side.production_unit) == self.production_text

    @invariant()
    def candidates_files_are_gone_unless_kept(self) -> None:
        for unit in self.seen_units - {self.side.production_unit}:
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
        if self.promoted:
            assert production.text.last_known_good, "a promoted candidate passed the gate"


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
