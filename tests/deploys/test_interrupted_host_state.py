"""An interrupted deploy's request says what its host runs, from the job's steps
(deploys/jobs/interrupted.py): the rollout page shows it per host."""

from __future__ import annotations

import pytest

from deploys.jobs.lease import lease_seconds, wait_seconds
from deploys.jobs.runner import fail_abandoned_deploys
from deploys.models import DeployRequest, Host, JobStep
from tests.deploys.test_jobs_abandoned import running_request

pytestmark = pytest.mark.django_db
Phase, Status = JobStep.Phase, JobStep.Status


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        ([], "its file is the unit it had before this job (not pushed); not stopped by this job"),
        (
            [
                ("push", Phase.MAIN, Status.SUCCEEDED),
                ("stop", Phase.MAIN, Status.SUCCEEDED),
                ("start", Phase.MAIN, Status.SUCCEEDED),
                ("readiness", Phase.MAIN, Status.RUNNING),
            ],
            "its file is the requested unit; started by this job and not stopped since",
        ),
        (
            [
                ("push", Phase.MAIN, Status.SUCCEEDED),
                ("stop", Phase.MAIN, Status.SUCCEEDED),
                ("start", Phase.MAIN, Status.FAILED),
            ],
            "its file is the requested unit; stopped by this job and not started since",
        ),
        (
            [("push", Phase.MAIN, Status.SUCCEEDED), ("push", Phase.ROLLBACK, Status.RUNNING)],
            "its file is the requested unit or the one it had before (a push was cut off",
        ),
        (
            [
                ("push", Phase.MAIN, Status.SUCCEEDED),
                ("stop", Phase.MAIN, Status.SUCCEEDED),
                ("push", Phase.ROLLBACK, Status.SUCCEEDED),
                ("start", Phase.ROLLBACK, Status.SKIPPED),
            ],
            "its file is the unit it had before this job (put back); stopped by this job",
        ),
    ],
)
def test_a_dead_workers_deploy_says_what_its_steps_left_on_the_host(
    steps: list[tuple[str, str, str]], said: str
) -> None:
    host = Host.objects.create(name="gpu-a", address="127.0.0.1", host_key="ssh-ed25519 AAAA")
    request = running_request(started_ago=wait_seconds() + lease_seconds() + 60, host=host)
    for name, phase, status in steps:
        JobStep.objects.create(request=request, name=name, phase=phase, status=status)
    assert fail_abandoned_deploys() == 1
    request.refresh_from_db()
    assert request.status == DeployRequest.Status.INTERRUPTED
    assert request.host_state.startswith(f"{request.unit_name}.service on gpu-a: ")
    assert said in request.host_state
    assert request.host_state.endswith("(from the job's steps, not read on the host)")
