"""The seed's trial end to end on a real systemd + sshd test host running the vLLM double:
production (74 tok/s per stream) runs as a version specadmin knows; the trial measures it
first (it has no baseline there yet), stops it, runs the seed's n-gram config
(`--speculative-config '{"method": "ngram", "num_speculative_tokens": 5,
"prompt_lookup_max": 4}'`), which the double serves about 13% slower by default (little
accepted per draft token, as the seed found: docs/sweeps.md), gates it against
production's baseline, and puts production back, measured again. Twice, on one host (CI
time): the variant as its own unit, and *in place of* production, in production's own
unit file, which holds production's approved text again at the end (its sha256 read on
the host)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command

from audit.verify import verify_chain
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, JobStep, TrialCandidate
from deploys.running import record_read, unit_on_host
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import Candidate, trial_request_create
from perf.models import Baseline, BenchPolicy
from tests.deploys.conftest import module_testhost  # noqa: F401 (fixture)
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users, service_port
from tests.perf.quick_policy import QUICK_BENCH_POLICY
from tests.testhost.host import TestHost
from units.models import ProfileVersion
from units.services import profile_create

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]
SEED_SPEED = {
    "VLLM_DOUBLE_TOKENS_PER_S": "74",
    "VLLM_DOUBLE_TTFT_MS": "60",
}
NGRAM = {"spec_method": "ngram", "spec_num_tokens": 5, "spec_prompt_lookup_max": 4}
NGRAM_FLAG = (
    """--speculative-config '{"method": "ngram", "num_speculative_tokens": 5, """
    """"prompt_lookup_max": 4}'"""
)


@pytest.fixture
def trialhost(module_testhost: TestHost) -> Iterator[TestHost]:  # noqa: F811 (fixture)
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving hands the job to django-q2 on commit; here the test runs it itself."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


@dataclass
class Seed:
    """Production running on the host as a version specadmin knows (a probe read its
    text), and the seed's n-gram variant of it."""

    requester: Any
    approver: Any
    site: Host
    production: ProfileVersion
    ngram: ProfileVersion

    @property
    def unit(self) -> str:
        return f"{self.production.profile.name}.service"

    def run(self, *candidates: ProfileVersion | Candidate) -> DeployRequest:
        trial = trial_request_create(
            host=self.site,
            candidates=list(candidates),
            requested_by=self.requester,
            production_unit=self.production.profile.name,
            acknowledge_warnings=True,
        )
        trial = deploy_request_approve(request=trial, approver=self.approver)
        runner.run_deploy(trial.pk)
        trial.refresh_from_db()
        return trial


@pytest.fixture
def seed(trialhost: TestHost) -> Seed:
    requester, approver = make_users()
    site: Host = make_host(trialhost)
    production = profile_create(
        data=double_profile(environment=SEED_SPEED, port=service_port()), created_by=None
    )
    BenchPolicy.objects.create(profile=production, **QUICK_BENCH_POLICY)
    version = production.versions.get()
    trialhost.write_file(f"{UNIT_DIR}/{production.name}.service", version.unit_text)
    trialhost.systemctl("daemon-reload")
    trialhost.systemctl("start", f"{production.name}.service")
    record_read(host=site, unit_name=production.name, data=version.unit_text.encode(), step="probe")
    ngram = profile_create(
        data={**version.data, **NGRAM, "name": f"{production.name}-ngram"}, created_by=None
    ).versions.get()
    return Seed(requester, approver, site, version, ngram)


def test_the_seeds_ngram_trial_is_slower_and_production_is_back_at_its_speed(
    trialhost: TestHost, seed: Seed
) -> None:
    production, ngram, site, unit = seed.production.profile, seed.ngram, seed.site, seed.unit
    version = seed.production
    assert NGRAM_FLAG in ngram.unit_text

    trial = seed.run(ngram)

    assert trial.status == DeployRequest.Status.SUCCEEDED, trial.status_reason
    assert trial.status_reason.startswith("n-gram k=5: 1"), trial.status_reason
    said = re.search(
        r"% slower than production at 1 stream; production restored at ([0-9.]+) tok/s$",
        trial.status_reason,
    )
    assert said, trial.status_reason
    candidate = trial.candidates.get()
    assert candidate.outcome == TrialCandidate.Outcome.SLOWER, candidate.outcome_reason
    baseline = Baseline.objects.get(profile=production, host=site)
    assert candidate.figures["baseline_run"] == baseline.run_id
    # production back at its own speed (output tok/s over 32 tokens, TTFT included)
    assert float(said.group(1)) == pytest.approx(baseline.run.output_tok_s, rel=0.05)
    # production runs its own text again; the candidate's unit is gone
    assert trialhost.read_file(f"{UNIT_DIR}/{unit}") == version.unit_text
    assert trialhost.systemctl("is-active", unit).stdout.strip() == "active"
    assert trialhost.ssh(["test", "-e", f"{UNIT_DIR}/{ngram.profile.name}.service"]).returncode
    assert unit_on_host(host=site, unit_name=production.name).text.versions == (version,)
    assert f"{unit} (production): active (running)" in trial.host_state
    assert verify_chain().ok


def test_the_ngram_variant_in_productions_unit_leaves_productions_approved_text_on_the_host(
    trialhost: TestHost, seed: Seed
) -> None:
    path = f"{UNIT_DIR}/{seed.unit}"
    name = seed.production.profile.name

    trial = seed.run(Candidate(seed.ngram, unit_name=name))

    assert trial.status == DeployRequest.Status.SUCCEEDED, trial.status_reason
    candidate = trial.candidates.get()
    assert candidate.unit_name == name
    assert candidate.outcome == TrialCandidate.Outcome.SLOWER, candidate.outcome_reason
    pushed = JobStep.objects.get(request=trial, trial_position=1, name="push")
    assert pushed.result["sha256"] == candidate.unit_sha256, "it ran in production's file"
    # the host is the truth: production's file is its approved text, read there
    on_host = trialhost.ssh(["sha256sum", path]).stdout.split()[0]
    assert on_host == trial.approved_sha256
    back = JobStep.objects.filter(request=trial, name="production_text_back").order_by("pk")
    assert [s.status for s in back] == [JobStep.Status.SUCCEEDED] * 2
    assert back.first().result["written"] is True
    assert trialhost.systemctl("is-active", seed.unit).stdout.strip() == "active"
    assert unit_on_host(host=seed.site, unit_name=name).text.versions == (seed.production,)
    assert f"{seed.unit} (production, candidate 1): active (running)" in trial.host_state
    assert "its file is production's approved text" in trial.host_state
    assert verify_chain().ok
    call_command("verifyaudit", stdout=StringIO())  # raises CommandError on a broken chain
