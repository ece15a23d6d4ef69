"""`manage.py bench --vllm-bench`: `vllm bench serve` runs on the host itself (the vLLM
double's implementation in the test host), with the executable of an approved, pushed unit,
audited, and its saved result is imported as a stored run."""

from __future__ import annotations

import time
from collections.abc import Callable
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from audit.models import AuditEvent
from deploys.models import DeployRequest, PushedUnit
from perf.models import BenchRun
from perf.vllm_bench import VLLM_BENCH_RAN
from tests.deploys.helpers import People, make_host
from tests.testhost.host import TestHost
from tests.units.factories import baseline
from units.services import profile_create

pytestmark = [pytest.mark.testhost, pytest.mark.django_db(transaction=True)]
PORT = 18733


def _serve(host: TestHost) -> None:
    host.write_file(
        "/etc/systemd/system/vllm-vb.service",
        "[Unit]\nDescription=vLLM double (vllm bench serve)\n\n[Service]\nType=exec\n"
        "Environment=CUDA_VISIBLE_DEVICES=1 VLLM_DOUBLE_LOAD_S=0.3 VLLM_DOUBLE_TOKENS_PER_S=200\n"
        f"ExecStart=/usr/local/bin/vllm serve m --host 127.0.0.1 --port {PORT}\n"
        "TimeoutStopSec=5\n",
    )
    host.ssh(["systemctl", "daemon-reload"], check=True)
    host.ssh(["systemctl", "restart", "vllm-vb.service"], check=True)
    for _ in range(150):
        res = host.ssh(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{PORT}/health"])
        if res.returncode == 0:
            return
        time.sleep(0.2)
    raise AssertionError("the double did not become healthy")


def test_vllm_bench_serve_runs_on_the_host_with_an_approved_executable_and_is_imported(
    testhost: TestHost, people: People, make_request: Callable[..., DeployRequest]
) -> None:
    host = make_host(testhost)
    profile = profile_create(
        data=baseline(name="vb-profile", vllm_executable="/usr/local/bin/vllm"),
        created_by=people.olga,
    )
    args = [
        "bench",
        f"http://127.0.0.1:{PORT}",
        "--profile",
        "vb-profile",
        "--host",
        host.name,
        "--vllm-bench",
        "--requests",
        "4",
        "--max-tokens",
        "12",
        "--concurrency",
        "1,2",
    ]
    with pytest.raises(CommandError, match="no approved vLLM executable to run on"):
        call_command(*args, stdout=StringIO(), stderr=StringIO())
    request = make_request(profile_version=profile.versions.get(), host=host)
    PushedUnit.objects.create(host=host, unit_name="vb", request=request, text="x", sha256="0")
    try:
        _serve(testhost)
        out = StringIO()
        call_command(*args, stdout=out, stderr=StringIO())
    finally:
        testhost.ssh(["systemctl", "stop", "vllm-vb.service"])
    run = BenchRun.objects.get()
    assert run.engine == "vllm-bench-serve"
    assert [lv["concurrency"] for lv in run.result["levels"]] == [1, 2]
    assert all(lv["completed"] == 4 for lv in run.result["levels"])
    assert run.tpot_p50_ms == pytest.approx(5.0, rel=0.25)
    assert out.getvalue().startswith("vllm-bench-serve · model")
    events = AuditEvent.objects.filter(kind=VLLM_BENCH_RAN).order_by("pk")
    assert [e.payload["argv"][2:5] for e in events] == [
        ["/usr/local/bin/vllm", "bench", "serve"]
    ] * 2
    assert testhost.ssh(["sh", "-c", "ls -d /tmp/specadmin-bench-* 2>/dev/null"]).stdout == ""
