"""A trial candidate that takes production's own unit name (docs/trials.md, "Candidates"):
its text replaces production's file while it is tried, and production's approved text is
written back and read back before production starts again — after a success, a failure,
a cancel — unless the candidate is promoted, when its text stays and runs."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from audit.models import AuditEvent
from deploys.cancel_plan import cancel_plan
from deploys.models import DeployRequest, JobStep, TrialCandidate
from deploys.running import unit_on_host
from deploys.services.trial_requests import Candidate
from deploys.services.unit_requests import deploy_job_cancel
from hostops.channel.base import StagedFile, Transport
from hostops.channel.push import sha256_hex
from tests.deploys.helpers import People
from tests.deploys.trial_support import PRODUCTION, TrialSide
from tests.doubles.unit_host import UnitHostTransport

Status = DeployRequest.Status
Outcome = TrialCandidate.Outcome
NGRAM = "vllm-kimi-k25-int4-ngram"
UNIT = f"{PRODUCTION}.service"
pytestmark = pytest.mark.django_db


def in_place(side: TrialSide, name: str = NGRAM) -> Candidate:
    """The n-gram variant, run as production's own unit."""
    return Candidate(side.candidate(name), unit_name=PRODUCTION)


def text_back_steps(request: DeployRequest) -> list[JobStep]:
    return list(JobStep.objects.filter(request=request, name="production_text_back").order_by("pk"))


def assert_production_back(side: TrialSide, request: DeployRequest) -> None:
    assert side.file(PRODUCTION) == side.production.unit_text.encode()
    assert sha256_hex(side.file(PRODUCTION) or b"") == request.approved_sha256
    assert side.active() == {UNIT}
    back = text_back_steps(request)
    assert back, "production's text back is a step of its own"
    assert back[-1].status == JobStep.Status.SUCCEEDED
    assert back[-1].result["read_back_sha256"] == request.approved_sha256
    assert back[-1].trial_position == 0
    running = unit_on_host(host=side.host, unit_name=PRODUCTION)
    assert running is not None and running.text.versions == (side.production,)


def test_a_candidate_in_productions_unit_runs_in_its_file_and_productions_text_is_read_back(
    trial_side: TrialSide,
) -> None:
    candidate = in_place(trial_side)
    request = trial_side.run(trial_side.request(candidate))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert request.candidates.get().outcome == Outcome.SLOWER
    assert "production restored at 73.8 tok/s" in request.status_reason
    assert_production_back(trial_side, request)
    tried = request.candidates.get()
    pushed = AuditEvent.objects.filter(kind="unit.pushed", payload__request=request.pk)
    shas = [e.payload["sha256"] for e in pushed.order_by("pk")]
    assert shas == [tried.unit_sha256, request.approved_sha256], "the candidate, then Y back"
    assert pushed.order_by("pk").last().payload["reason"].startswith("production's text back")
    assert not JobStep.objects.filter(request=request, name="remove").exists(), (
        "production's unit file is never removed"
    )


def test_a_candidate_in_productions_unit_that_crashes_while_loading_gets_productions_text_back(
    trial_side: TrialSide,
) -> None:
    trial_side.script.crash = {"candidate 1"}
    request = trial_side.run(trial_side.request(in_place(trial_side)))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert request.candidates.get().outcome == Outcome.FAILED
    assert_production_back(trial_side, request)


def test_a_cancel_during_a_candidate_in_productions_unit_puts_productions_text_back(
    trial_side: TrialSide, people: People
) -> None:
    trial_side.script.cancel_at = ("candidate 1", "readiness")
    trial_side.script.on_cancel = lambda req: deploy_job_cancel(
        request=DeployRequest.objects.get(pk=req.pk), user=people.bob
    )
    request = trial_side.run(trial_side.request(in_place(trial_side)))
    assert request.status == Status.CANCELLED, request.status_reason
    assert "production restored" in request.status_reason
    assert_production_back(trial_side, request)
    assert text_back_steps(request)[-1].phase == JobStep.Phase.ROLLBACK
    approvals = AuditEvent.objects.filter(kind="deploy.approved", payload__request=request.pk)
    assert approvals.count() == 1, "going back to production needs no second approval"


def test_two_candidates_may_share_productions_unit_name_and_each_runs_in_it(
    trial_side: TrialSide,
) -> None:
    a, b = in_place(trial_side), in_place(trial_side, "vllm-kimi-k25-int4-ngram-k3")
    trial_side.script.change_pct = {"candidate 2": 2.0}
    request = trial_side.run(trial_side.request(a, b))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert list(request.candidates.values_list("outcome", flat=True)) == [
        Outcome.SLOWER,
        Outcome.WITHIN,
    ]
    assert_production_back(trial_side, request)


def test_two_candidates_under_the_same_other_name_are_refused(trial_side: TrialSide) -> None:
    a = Candidate(trial_side.candidate(NGRAM), unit_name="vllm-x")
    b = Candidate(trial_side.candidate("vllm-kimi-k25-int4-ngram-k3"), unit_name="vllm-x")
    with pytest.raises(ValidationError, match="same unit name"):
        trial_side.request(a, b)


def test_a_promoted_candidate_in_productions_unit_stays_and_what_runs_names_it(
    trial_side: TrialSide,
) -> None:
    trial_side.script.change_pct = {"candidate 1": 20.0}
    request = trial_side.run(trial_side.request(in_place(trial_side), promote_threshold=10))
    assert request.status == Status.SUCCEEDED, request.status_reason
    assert "left running as production" in request.status_reason
    promoted = request.candidates.get()
    assert promoted.outcome == Outcome.PROMOTED
    assert trial_side.active() == {UNIT}
    assert trial_side.file(PRODUCTION) == promoted.unit_text.encode()
    running = unit_on_host(host=trial_side.host, unit_name=PRODUCTION)
    assert running is not None
    assert running.text.versions == (promoted.profile_version,)
    assert running.text.last_known_good
    assert running.last_good is not None and running.last_good.sha256 == promoted.unit_sha256


class RewritesProduction(UnitHostTransport):
    """A host where something (a config agent) changes production's file as it is put
    back: the read-back is not the approved text."""

    production_text = b""

    def _commit_file(self, staged: StagedFile) -> None:
        super()._commit_file(staged)
        if self.host.files[staged.path] == self.production_text:
            self.host.files[staged.path] += b"# managed by an agent\n"


def test_a_write_back_that_reads_back_another_text_is_loud_and_production_is_not_started(
    trial_side: TrialSide, monkeypatch: pytest.MonkeyPatch
) -> None:
    def connect(host: object) -> Transport:
        transport = RewritesProduction(trial_side.disk)
        transport.production_text = trial_side.production.unit_text.encode()
        return transport

    monkeypatch.setattr(trial_side, "connect", connect)
    request = trial_side.run(trial_side.request(in_place(trial_side)))
    assert request.status == Status.ROLLBACK_FAILED, request.status_reason
    assert "PRODUCTION WAS NOT RESTORED" in request.status_reason
    assert "production restored" not in request.status_reason
    assert "is not production's approved text" in request.status_reason
    assert UNIT not in trial_side.active(), "never started with a text nobody approved"
    back = text_back_steps(request)
    assert back and all(s.status == JobStep.Status.FAILED for s in back)
    ended = AuditEvent.objects.filter(kind="deploy.rollback_failed", payload__request=request.pk)
    assert ended.get().payload["trial"]["production_restored"] is False


def test_the_plan_and_the_page_say_the_candidate_takes_productions_unit(
    trial_side: TrialSide,
) -> None:
    request = trial_side.request(in_place(trial_side))
    plan = request.job_settings["trial"]
    assert plan["candidates"][0]["takes_production_unit"] is True
    assert plan["candidates"][0]["keep"] is False
    assert "production's approved text is written back" in plan["end"]
    client = Client()
    client.force_login(trial_side.approver)
    html = client.get(reverse("deploys:request_detail", args=[request.pk])).content.decode()
    assert "production's unit: its text written back" in html
    assert ">removed<" not in html


def test_a_candidate_row_renamed_to_productions_unit_after_the_approval_voids_the_trial(
    trial_side: TrialSide,
) -> None:
    request = trial_side.request(trial_side.candidate(NGRAM))
    TrialCandidate.objects.filter(request=request).update(unit_name=PRODUCTION)
    with pytest.raises(ValidationError, match="void"):
        trial_side.run(request)


def test_the_cancel_plan_of_such_a_trial_says_productions_text_is_written_back_first(
    trial_side: TrialSide,
) -> None:
    request = trial_side.request(in_place(trial_side))
    DeployRequest.objects.filter(pk=request.pk).update(status=Status.RUNNING)
    request.refresh_from_db()
    steps = cancel_plan(request).steps
    back = next(i for i, s in enumerate(steps) if "approved text back" in s)
    assert back < next(i for i, s in enumerate(steps) if s.startswith("Start "))
