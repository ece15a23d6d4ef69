"""The docs' CI recipe (examples/ci/deploy-unit.sh, docs/api.md) against a live server:
it lints the repository's units, imports the unit, requests its deploy and waits; a
person approves on the web page; the job's end decides the script's exit status."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from django.test import Client
from django.urls import reverse

from deploys.models import DeployRequest, Host, JobStep
from perf.models import BenchRun
from tests.deploys.helpers import Enqueued, FakeHosts, People
from tests.perf.factories import stored_run

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples/ci/deploy-unit.sh"
UNIT = """[Unit]
Description=Qwen on one GPU

[Service]
User=vllm
ExecStart=/opt/vllm/bin/vllm serve /models/qwen --host 127.0.0.1 --port 9000
Restart=on-failure
"""


def _start(live_server: object, secret: str, repo: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "SPECADMIN_URL": str(live_server.url),  # type: ignore[attr-defined]
        "SPECADMIN_TOKEN": secret,
        "POLL_S": "0.2",
        "WAIT_S": "120",
        "ACKNOWLEDGE_WARNINGS": "1",
    }
    return subprocess.Popen(
        ["bash", str(SCRIPT), str(repo / "units/qwen.service"), "gpu-a"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _pending() -> DeployRequest | None:
    for _ in range(600):  # the script lints, imports and requests first
        found = DeployRequest.objects.filter(status="pending").first()
        if found is not None:
            return found
        time.sleep(0.1)
    return None


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("outcome", ["succeeded", "failed", "regressed"])
def test_the_ci_recipe_waits_for_a_person_and_fails_when_the_job_fails_or_regresses(
    live_server: object,
    people: People,
    host: Host,
    on_host: FakeHosts,
    enqueued: Enqueued,
    token: Callable[..., str],
    tmp_path: Path,
    outcome: str,
) -> None:
    (tmp_path / "units").mkdir()
    (tmp_path / "units/qwen.service").write_text(UNIT, encoding="utf-8")
    script = _start(live_server, token(people.olga, "request"), tmp_path)
    request = _pending()
    assert request is not None, script.communicate(timeout=30)[0]
    assert script.poll() is None  # waiting for the approval
    person = Client()
    person.force_login(people.alice)
    person.post(
        reverse("deploys:request_approve", args=[request.pk]), {"sha256": request.unit_sha256}
    )
    assert enqueued.deploys == [request.pk]
    # The job (its worker is not part of this test): steps written, then its end.
    JobStep.objects.create(request=request, name="preflight", status="succeeded", log="ok")
    failed = outcome == "failed"
    JobStep.objects.create(
        request=request,
        name="readiness",
        status="failed" if failed else "succeeded",
        log="vLLM exited: CUDA out of memory" if failed else "ready",
    )
    if outcome == "regressed":
        run = stored_run(request.profile_version.profile, host, 50.0)
        BenchRun.objects.filter(pk=run.pk).update(request=request, verdict="regressed")
    DeployRequest.objects.filter(pk=request.pk).update(status="failed" if failed else "succeeded")
    output, _ = script.communicate(timeout=120)
    assert "profile qwen version 1" in output
    assert f"request #{request.pk} waits for approval" in output
    if outcome == "succeeded":
        assert script.returncode == 0, output
        assert "main readiness: succeeded" in output
    else:
        assert script.returncode == 1, output
        expected = "CUDA out of memory" if failed else "the benchmark regressed"
        assert expected in output


@pytest.mark.django_db(transaction=True)
def test_the_ci_recipe_stops_on_a_blocking_lint_finding(
    live_server: object, people: People, token: Callable[..., str], tmp_path: Path
) -> None:
    (tmp_path / "units").mkdir()
    (tmp_path / "units/qwen.service").write_text(UNIT, encoding="utf-8")
    (tmp_path / "units/broken.service").write_text(
        "[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --no-such-flag\n", encoding="utf-8"
    )
    output, _ = _start(live_server, token(people.olga, "request"), tmp_path).communicate(
        timeout=120
    )
    assert "lint: blocking findings" in output and "broken.service" in output
    assert not DeployRequest.objects.exists()
