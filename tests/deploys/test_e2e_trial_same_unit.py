"""The seed's n-gram variant tried *in place of* production on a real systemd + sshd test
host running the vLLM double: the candidate takes production's own unit name, so its push
replaces production's file; after the trial that file is production's approved text again
(its sha256 read on the host), production runs, and the audit chain verifies. One lean
test (CI time); tests/deploys/test_e2e_trial.py has the trial under the candidate's own
name."""

from __future__ import annotations

from collections.abc import Iterator
from io import StringIO

import pytest
from django.core.management import call_command

from audit.verify import verify_chain
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep, TrialCandidate
from deploys.running import record_read, unit_on_host
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import Candidate, trial_request_create
from perf.models import BenchPolicy
from tests.deploys.conftest import module_testhost  # noqa: F401 (fixture)
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users, service_port
from tests.deploys.test_e2e_trial import NGRAM, POLICY, SEED_SPEED
from tests.testhost.host import TestHost
from units.services import profile_create

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def trialhost(module_testhost: TestHost) -> Iterator[TestHost]:  # noqa: F811 (fixture)
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving hands the job to django-q2 on commit; here the test runs it itself."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


def test_the_ngram_variant_in_productions_unit_leaves_productions_approved_text_on_the_host(
    trialhost: TestHost,
) -> None:
    requester, approver = make_users()
    site: Host = make_host(trialhost)
    production = profile_create(
        data=double_profile(environment=SEED_SPEED, port=service_port()), created_by=None
    )
    BenchPolicy.objects.create(profile=production, **POLICY)
    version = production.versions.get()
    unit = f"{production.name}.service"
    path = f"{UNIT_DIR}/{unit}"
    trialhost.write_file(path, version.unit_text)
    trialhost.systemctl("daemon-reload")
    trialhost.systemctl("start", unit)
    record_read(host=site, unit_name=production.name, data=version.unit_text.encode(), step="probe")
    ngram = profile_create(
        data={**version.data, **NGRAM, "name": f"{production.name}-ngram"}, created_by=None
    ).versions.get()

    trial = trial_request_create(
        host=site,
        candidates=[Candidate(ngram, unit_name=production.name)],
        requested_by=requester,
        production_unit=production.name,
        acknowledge_warnings=True,
    )
    trial = deploy_request_approve(request=trial, approver=approver)
    runner.run_deploy(trial.pk)
    trial.refresh_from_db()

    assert trial.status == DeployRequest.Status.SUCCEEDED, trial.status_reason
    candidate = trial.candidates.get()
    assert candidate.unit_name == production.name
    assert candidate.outcome == TrialCandidate.Outcome.SLOWER, candidate.outcome_reason
    pushed = JobStep.objects.get(request=trial, trial_position=1, name="push")
    assert pushed.result["sha256"] == candidate.unit_sha256, "it ran in production's file"
    # the host is the truth: production's file is its approved text, read there
    on_host = trialhost.ssh(["sha256sum", path]).stdout.split()[0]
    assert on_host == trial.approved_sha256
    back = JobStep.objects.filter(request=trial, name="production_text_back").order_by("pk")
    assert [s.status for s in back] == [JobStep.Status.SUCCEEDED] * 2
    assert back.first().result["written"] is True
    assert trialhost.systemctl("is-active", unit).stdout.strip() == "active"
    assert unit_on_host(host=site, unit_name=production.name).text.versions == (version,)
    assert f"{unit} (production, candidate 1): active (running)" in trial.host_state
    assert "its file is production's approved text" in trial.host_state
    assert verify_chain().ok
    call_command("verifyaudit", stdout=StringIO())  # raises CommandError on a broken chain
