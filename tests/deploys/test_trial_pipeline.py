"""A trial's job on an in-memory host (tests/deploys/trial_support.py): each candidate in
production's place, gated against production's baseline, production back at the end."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings

from audit.models import AuditEvent
from deploys.jobs import runner
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.running import unit_on_host
from deploys.services.trial_requests import Candidate
from deploys.services.unit_requests import deploy_job_cancel
from tests.deploys.helpers import People
from tests.deploys.trial_support import PRODUCTION, TrialSide
from tests.deploys.what_runs_support import FAST
from tests.units.factories import ngram
from units.services import profile_create

Status = DeployRequest.Status
NGRAM = "vllm-kimi-k25-int4-ngram"
pytestmark = pytest.mark.django_db


def outcomes(request: DeployRequest) -> list[str]:
    return list(request.candidates.order_by("position").values_list("outcome", flat=True))


def test_a_slower_candidate_is_recorded_and_production_is_back_running_at_its_speed(
    trial_side: TrialSide,
) -> None:
    request = trial_side.run(trial_side.request(trial_side.candidate(NGRAM)))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert request.status_reason == (
        "n-gram k=5: 14.7% slower than production at 1 stream; production restored at 73.8 tok/s"
    )
    assert outcomes(request) == [TrialCandidate.Outcome.SLOWER]
    assert trial_side.active() == {f"{PRODUCTION}.service"}
    assert trial_side.file(NGRAM) is None, "the candidate's unit file is removed"
    assert trial_side.file(PRODUCTION) == trial_side.production.unit_text.encode()
    assert unit_on_host(host=trial_side.host, unit_name=PRODUCTION).text.versions == (
        trial_side.production,
    )


def test_production_is_stopped_once_and_each_candidate_runs_alone_in_its_place(
    trial_side: TrialSide,
) -> None:
    a, b = trial_side.candidate(NGRAM), trial_side.candidate("vllm-kimi-k25-int4-ngram-k3")
    request = trial_side.run(trial_side.request(a, b))
    assert request.status == Status.SUCCEEDED, request.status_reason
    order = [(u, s) for u, s in trial_side.script.seen if s in ("stop", "start")]
    assert order == [
        (f"{PRODUCTION}.service", "stop"),
        (f"{NGRAM}.service", "start"),
        (f"{NGRAM}.service", "stop"),
        ("vllm-kimi-k25-int4-ngram-k3.service", "start"),
        ("vllm-kimi-k25-int4-ngram-k3.service", "stop"),
        (f"{PRODUCTION}.service", "start"),
    ]
    positions = set(
        JobStep.objects.filter(request=request).values_list("trial_position", flat=True)
    )
    assert positions == {None, 0, 1, 2}, "None: the host lock, the trial as a whole"


def test_a_candidate_the_hosts_vllm_rejects_is_skipped_before_production_is_stopped(
    trial_side: TrialSide,
) -> None:
    bad, good = trial_side.candidate("vllm-bad"), trial_side.candidate(NGRAM)
    trial_side.script.rejected = {"vllm-bad.service"}
    request = trial_side.run(trial_side.request(bad, good))
    assert outcomes(request) == [TrialCandidate.Outcome.REJECTED, TrialCandidate.Outcome.SLOWER]
    seen = trial_side.script.seen
    rejected = seen.index(("vllm-bad.service", "vllm_check"))
    assert rejected < seen.index((f"{PRODUCTION}.service", "stop"))
    assert ("vllm-bad.service", "start") not in seen
    assert trial_side.file("vllm-bad") is None, "never written"
    assert "rejected by the host's vllm" in request.status_reason


def test_only_rejected_candidates_leave_production_untouched(trial_side: TrialSide) -> None:
    trial_side.script.rejected = {f"{NGRAM}.service"}
    request = trial_side.run(trial_side.request(trial_side.candidate(NGRAM)))
    assert request.status == Status.FAILED
    assert "production was not touched" in request.status_reason
    assert (f"{PRODUCTION}.service", "stop") not in trial_side.script.seen


def test_a_candidate_that_crashes_while_loading_is_recorded_with_its_evidence_and_the_next_runs(
    trial_side: TrialSide,
) -> None:
    crash, next_one = trial_side.candidate("vllm-crash"), trial_side.candidate(NGRAM)
    trial_side.script.crash = {"vllm-crash.service"}
    request = trial_side.run(trial_side.request(crash, next_one))
    assert request.status == Status.SUCCEEDED
    assert outcomes(request) == [TrialCandidate.Outcome.FAILED, TrialCandidate.Outcome.SLOWER]
    failed = request.candidates.get(position=1)
    assert failed.figures["evidence"]["step"] == "readiness"
    assert "OutOfMemoryError" in failed.figures["evidence"]["lines"][0]
    assert trial_side.active() == {f"{PRODUCTION}.service"}


def test_a_cancel_during_a_candidates_readiness_puts_production_back_without_a_second_approval(
    trial_side: TrialSide, people: People
) -> None:
    bob = people.bob
    a, b = trial_side.candidate(NGRAM), trial_side.candidate("vllm-later")
    trial_side.script.cancel_at = (f"{NGRAM}.service", "readiness")
    trial_side.script.on_cancel = lambda req: deploy_job_cancel(
        request=DeployRequest.objects.get(pk=req.pk), user=bob
    )
    request = trial_side.run(trial_side.request(a, b))
    assert request.status == Status.CANCELLED, request.status_reason
    assert request.status_reason.startswith(
        f"cancelled by bob during readiness of candidate 1 ({NGRAM}.service)"
    )
    assert "production restored" in request.status_reason
    assert outcomes(request) == [TrialCandidate.Outcome.CANCELLED, TrialCandidate.Outcome.CANCELLED]
    assert trial_side.active() == {f"{PRODUCTION}.service"}
    assert ("vllm-later.service", "start") not in trial_side.script.seen
    approvals = AuditEvent.objects.filter(kind="deploy.approved", payload__request=request.pk)
    assert approvals.count() == 1


def test_production_that_comes_back_slower_than_its_baseline_is_loud(trial_side: TrialSide) -> None:
    trial_side.script.production_back_tok_s = 61.0
    request = trial_side.run(trial_side.request(trial_side.candidate(NGRAM)))
    assert "PRODUCTION IS SLOWER THAN ITS BASELINE" in request.status_reason


def test_a_candidate_kept_stays_on_the_host_stopped(trial_side: TrialSide) -> None:
    kept = Candidate(trial_side.candidate(NGRAM), keep=True)
    trial_side.run(trial_side.request(kept))
    assert trial_side.file(NGRAM) is not None
    assert f"{NGRAM}.service" not in trial_side.active()


def test_a_candidate_beating_production_by_the_threshold_is_left_running_as_production(
    trial_side: TrialSide,
) -> None:
    trial_side.script.change_pct = {f"{NGRAM}.service": 20.0}
    request = trial_side.run(trial_side.request(trial_side.candidate(NGRAM), promote_threshold=10))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert trial_side.active() == {f"{NGRAM}.service"}
    assert "left running as production" in request.status_reason
    assert trial_side.file(NGRAM) is not None


def test_production_changed_outside_specadmin_is_refused_with_that_reason(
    trial_side: TrialSide,
) -> None:
    trial_side.disk.files[trial_side.disk.path(f"{PRODUCTION}.service")] += b"# by hand\n"
    with pytest.raises(ValidationError, match="changed outside specadmin"):
        trial_side.request(trial_side.candidate(NGRAM))


def test_a_candidate_row_changed_after_the_approval_voids_the_trial(trial_side: TrialSide) -> None:
    request = trial_side.request(trial_side.candidate(NGRAM))
    TrialCandidate.objects.filter(request=request).update(keep=True)
    with pytest.raises(ValidationError, match="void"):
        trial_side.run(request)


@override_settings(Q_CLUSTER={"timeout": 1200, "retry": 1300}, DEPLOY_LOCK_WAIT_S=10)
def test_a_trial_whose_candidate_could_outlive_the_worker_timeout_is_refused_before_the_host(
    trial_side: TrialSide,
) -> None:
    """Each candidate's own waits count: a 45-minute load of a candidate would get the
    worker killed half-way, with production stopped."""
    slow = profile_create(
        data=ngram(name=NGRAM, **{**FAST, "deploy_ready_timeout_sec": 2700}),
        created_by=trial_side.requester,
    ).versions.get()
    request = trial_side.run(trial_side.request(slow))
    assert request.status == Status.FAILED
    assert request.status_reason.startswith("this job may take up to 3,110 s"), (
        request.status_reason
    )
    assert "Q_TIMEOUT=1200" in request.status_reason
    assert trial_side.active() == {f"{PRODUCTION}.service"}, "production was not touched"


class WorkerKilled(BaseException):
    """What the worker's death looks like from inside the job: nothing catches it."""


def test_a_worker_killed_mid_trial_leaves_it_interrupted_saying_what_runs_on_the_host(
    trial_side: TrialSide, monkeypatch: pytest.MonkeyPatch
) -> None:
    def die(request: object) -> None:
        raise WorkerKilled

    trial_side.script.cancel_at = (f"{NGRAM}.service", "readiness")
    trial_side.script.on_cancel = die
    request = trial_side.request(trial_side.candidate(NGRAM))
    with pytest.raises(WorkerKilled):
        trial_side.run(request)
    assert runner.fail_abandoned_deploys() == 1
    request.refresh_from_db()
    assert request.status == Status.INTERRUPTED
    assert (
        f"{NGRAM}.service (candidate 1) was started by the trial and not stopped since"
        in request.status_reason
    )
    assert f"{PRODUCTION}.service (production) was stopped by the trial" in request.status_reason
    assert request.host_state.startswith(f"on {trial_side.host.name}: ")
    assert f"{PRODUCTION}.service (production): inactive (dead)" in request.host_state
    assert f"{NGRAM}.service (candidate 1): active (running)" in request.host_state
