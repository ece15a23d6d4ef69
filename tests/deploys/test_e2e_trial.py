"""The seed's trial end to end on a real systemd + sshd test host running the vLLM double:
production (74 tok/s per stream) runs as a version specadmin knows; the trial measures it
first (it has no baseline there yet), stops it, runs the seed's n-gram config as its own
unit (`--speculative-config '{"method": "ngram", "num_speculative_tokens": 5,
"prompt_lookup_max": 4}'`), which the double serves about 13% slower by default (little
accepted per draft token, as the seed found: docs/sweeps.md), gates it against
production's baseline, and puts production back, measured again. One lean test (CI time)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from audit.verify import verify_chain
from deploys.jobs import queue, runner
from deploys.models import DeployRequest, Host, TrialCandidate
from deploys.running import record_read, unit_on_host
from deploys.services.deploy_requests import deploy_request_approve
from deploys.services.trial_requests import trial_request_create
from perf.models import Baseline, BenchPolicy
from tests.deploys.conftest import module_testhost  # noqa: F401 (fixture)
from tests.deploys.helpers import UNIT_DIR, double_profile, make_host, make_users, service_port
from tests.testhost.host import TestHost
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
POLICY = {
    "concurrency": [1],
    "num_requests": 4,
    "max_tokens": 32,
    "repeats": 2,
    "prompts": "chat",
    "noisy_budget_s": 0,
}


@pytest.fixture
def trialhost(module_testhost: TestHost) -> Iterator[TestHost]:  # noqa: F811 (fixture)
    yield module_testhost
    module_testhost.nsenter(["sh", "-c", "systemctl stop 'vllm-*' 2>/dev/null; true"])


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    """Approving hands the job to django-q2 on commit; here the test runs it itself."""
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


def test_the_seeds_ngram_trial_is_slower_and_production_is_back_at_its_speed(
    trialhost: TestHost,
) -> None:
    requester, approver = make_users()
    site: Host = make_host(trialhost)
    port = service_port()
    production = profile_create(
        data=double_profile(environment=SEED_SPEED, port=port), created_by=None
    )
    BenchPolicy.objects.create(profile=production, **POLICY)
    version = production.versions.get()
    unit = f"{production.name}.service"
    # Production as specadmin knows it: its version's text, running (a probe read it).
    trialhost.write_file(f"{UNIT_DIR}/{unit}", version.unit_text)
    trialhost.systemctl("daemon-reload")
    trialhost.systemctl("start", unit)
    record_read(host=site, unit_name=production.name, data=version.unit_text.encode(), step="probe")
    ngram = profile_create(
        data={**version.data, **NGRAM, "name": f"{production.name}-ngram"}, created_by=None
    ).versions.get()
    assert NGRAM_FLAG in ngram.unit_text

    trial = trial_request_create(
        host=site,
        candidates=[ngram],
        requested_by=requester,
        production_unit=production.name,
        acknowledge_warnings=True,
    )
    trial = deploy_request_approve(request=trial, approver=approver)
    runner.run_deploy(trial.pk)
    trial.refresh_from_db()

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
