"""The benchmark reaches a vLLM server bound to loopback on an SSH host through an SSH
port forward over the job's own connection (the step and `manage.py bench`).

The vLLM double runs on the real test host (systemd + sshd) as a transient unit with
`--host 127.0.0.1`. The test host shares this machine's loopback, so what shows the
traffic went through sshd is the forward's record (its own port, the bytes it carried)
and sshd refusing the forward when its configuration forbids forwarding.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from deploys.connect import transport_for
from deploys.jobs import benchmark as hook
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import Outcome
from deploys.models import DeployRequest, Host
from hostops.channel.records import FORWARD, CommandRecord
from hostops.service import VllmService
from perf.models import BenchPolicy, BenchRun
from tests.deploys.helpers import (
    NO_FORWARDING,
    listening,
    make_host,
    reload_sshd,
    unique,
)
from tests.ports import listening_port, refusing_port
from tests.testhost.host import TestHost
from units.models import ProfileVersion
from units.services import profile_update

pytestmark = [pytest.mark.testhost, pytest.mark.django_db]
DOUBLE_ENV = {
    "CUDA_VISIBLE_DEVICES": "0",
    "VLLM_DOUBLE_LOAD_S": "0",
    "VLLM_DOUBLE_CONFIG_DELAY_S": "0",
    "VLLM_DOUBLE_TTFT_MS": "20",
    "VLLM_DOUBLE_TOKENS_PER_S": "400",
}


@pytest.fixture
def loopback_vllm(testhost: TestHost) -> Iterator[Callable[[], int]]:
    """`start()`: the vLLM double on the host, bound to 127.0.0.1 only, on a port the kernel
    picks as it binds (port 0); its port."""
    units: list[str] = []

    def start() -> int:
        unit = unique("vllm-loopback")
        env = [f"--setenv={k}={v}" for k, v in DOUBLE_ENV.items()]
        argv = ["/usr/local/bin/vllm", "serve", "m", "--host", "127.0.0.1", "--port", "0"]
        testhost.ssh(["systemd-run", f"--unit={unit}", *env, "--", *argv], check=True)
        units.append(unit)
        return listening_port(testhost, unit)

    yield start
    for unit in units:
        testhost.ssh(["systemctl", "stop", f"{unit}.service"])


@pytest.fixture
def site(testhost: TestHost, people: object) -> Host:
    return make_host(testhost, name="gpu-loop")


def loopback_service(port: int) -> VllmService:
    return VllmService(
        argv=("vllm", "serve", "m", "--host", "127.0.0.1", "--port", str(port)),
        style="serve",
        args_start=2,
        model="m",
        served_model_name="m",
        address="127.0.0.1",
        port=port,
    )


@pytest.fixture
def job(
    site: Host, make_request: Callable[..., DeployRequest], small_policy: BenchPolicy
) -> Iterator[Callable[[int], BenchmarkJob]]:
    """`job(port)`: the benchmark step's context for a deploy to the test host whose
    server listens on 127.0.0.1:port, connected with the job's real SSH transport; the
    policy measures from the worker (tests/perf/test_onhost.py: the client on the host)."""
    small_policy.client_on_host = False
    small_policy.save()
    made: list[BenchmarkJob] = []

    def make(port: int) -> BenchmarkJob:
        ctx = JobContext.open(make_request(host=site), transport_for)
        bench = BenchmarkJob(ctx, Recorder(), loopback_service(port))
        made.append(bench)
        return bench

    yield make
    for bench in made:
        bench.ctx.close()


def forward_records(bench: BenchmarkJob) -> list[CommandRecord]:
    transport = bench.ctx.existing_transport
    assert transport is not None, "the step never connected to the host"
    return [r for r in transport.command_log.peek() if r.kind == FORWARD]


def forward_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ssh-forward-")]


def test_the_benchmark_measures_a_loopback_only_server_through_an_ssh_port_forward(
    job: Callable[[int], BenchmarkJob], loopback_vllm: Callable[[], int]
) -> None:
    port = loopback_vllm()
    bench = job(port)
    result = hook.benchmark(bench)
    assert result.outcome == Outcome.OK, result.reason
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert not run.incomplete and run.output_tok_s
    [record] = forward_records(bench)
    local_port = int(record.argv[1].split(":")[1])
    assert record.argv == ("-L", f"127.0.0.1:{local_port}:127.0.0.1:{port}")
    assert local_port != port
    assert record.exit_code == 0 and record.stdout_bytes > 0
    assert f"http://127.0.0.1:{port} on gpu-loop through an SSH port forward" in "\n".join(
        bench.rec.lines
    )
    assert run.url == f"http://127.0.0.1:{port} on gpu-loop (SSH port forward)"
    assert not forward_threads(), "the forward outlived the benchmark"
    assert not listening(local_port), "the forward's port still accepts connections"


def test_a_loopback_server_that_is_down_fails_the_step_naming_host_address_and_what_to_do(
    job: Callable[[int], BenchmarkJob],
) -> None:
    with refusing_port() as port:
        result = hook.benchmark(job(port))
    assert result.outcome == Outcome.FAILED
    assert result.reason.startswith(
        f"benchmark: nothing answers at 127.0.0.1:{port} on gpu-loop (sshd could not connect "
        "there through the SSH port forward)"
    ), result.reason
    assert "systemctl status" in result.reason and "Traceback" not in result.reason
    assert not forward_threads()
    assert not BenchRun.objects.exists()


def test_sshd_without_tcp_forwarding_fails_the_step_saying_how_to_allow_it(
    testhost: TestHost, job: Callable[[int], BenchmarkJob], loopback_vllm: Callable[[], int]
) -> None:
    port = loopback_vllm()
    testhost.write_file(NO_FORWARDING, "AllowTcpForwarding no\n")
    try:
        reload_sshd(testhost)
        result = hook.benchmark(job(port))
    finally:
        testhost.nsenter(["rm", "-f", NO_FORWARDING])
        reload_sshd(testhost)
    assert result.outcome == Outcome.FAILED
    assert result.reason.startswith(
        f"benchmark: vLLM on gpu-loop listens on 127.0.0.1:{port} only, and the host's sshd "
        "refused to forward to it (administratively prohibited"
    ), result.reason
    assert "AllowTcpForwarding local" in result.reason
    assert not forward_threads()


def _deployed_on_loopback(request: DeployRequest, port: int) -> None:
    """The request's profile, next version bound to 127.0.0.1:port, deployed successfully."""
    profile = request.profile_version.profile
    data = {**request.profile_version.data, "host": "127.0.0.1", "port": port}
    version = profile_update(profile=profile, data=data, updated_by=None)
    assert isinstance(version, ProfileVersion)
    DeployRequest.objects.filter(pk=request.pk).update(
        profile_version=version, status=DeployRequest.Status.SUCCEEDED, finished_at=timezone.now()
    )


def test_manage_bench_measures_a_deployed_loopback_server_through_the_forward(
    site: Host,
    make_request: Callable[..., DeployRequest],
    loopback_vllm: Callable[[], int],
    small_policy: BenchPolicy,
) -> None:
    port = loopback_vllm()
    _deployed_on_loopback(make_request(host=site), port)
    out, err = StringIO(), StringIO()
    profile = small_policy.profile.name
    args = ["--profile", profile, "--host", "gpu-loop", "--requests", "2", "--max-tokens", "8"]
    call_command("bench", *args, "--quiet", "--json", stdout=out, stderr=err)
    data = json.loads(out.getvalue())
    run = BenchRun.objects.get(pk=data["bench_run"])
    assert run.url == f"http://127.0.0.1:{port} on gpu-loop (SSH port forward)"
    assert not run.incomplete
    assert "through an SSH port forward" in err.getvalue()
    assert not forward_threads()


def test_manage_bench_says_what_to_do_when_the_deployed_loopback_server_is_down(
    site: Host, make_request: Callable[..., DeployRequest], small_policy: BenchPolicy
) -> None:
    with refusing_port() as port:
        _deployed_on_loopback(make_request(host=site), port)
        expected = f"nothing answers at 127.0.0.1:{port} on gpu-loop"
        with pytest.raises(CommandError, match=expected):
            call_command("bench", "--profile", small_policy.profile.name, "--host", "gpu-loop")
