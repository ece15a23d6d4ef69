"""The benchmark client on the host itself, as the unit's user (perf.onhost), on the real
test host: the vLLM double bound to 127.0.0.1, the client sent with the job and removed
after; where it cannot run there, the step measures through the SSH port forward and
says why."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from deploys.connect import transport_for
from deploys.jobs import benchmark as hook
from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.jobs.steps import Outcome
from deploys.models import DeployRequest, Host
from hostops.channel.records import FORWARD, RUN
from perf.models import BenchPolicy, BenchRun
from perf.onhost import OnHostClient, package_archive, package_files
from servebench.runner import BenchError, RunSettings
from tests.perf.test_forward import loopback_service, loopback_vllm, site  # noqa: F401
from tests.testhost.host import TestHost

pytestmark = [pytest.mark.testhost, pytest.mark.django_db]
# A Python that cannot import aiohttp: the host's own, without its site directories.
BARE_PYTHON = '#!/bin/sh\nexec /usr/bin/python3 -S "$@"\n'
BARE_VLLM = "#!/opt/bare/bin/python3\nraise SystemExit('not run by these tests')\n"


@pytest.fixture
def job(
    site: Host,  # noqa: F811 (fixture)
    make_request: Callable[..., DeployRequest],
    small_policy: BenchPolicy,
) -> Iterator[Callable[..., BenchmarkJob]]:
    made: list[BenchmarkJob] = []

    def make(port: int, executable: str = "vllm") -> BenchmarkJob:
        ctx = JobContext.open(make_request(host=site), transport_for)
        service = loopback_service(port)
        service = type(service)(**{**service.__dict__, "argv": (executable, *service.argv[1:])})
        bench = BenchmarkJob(ctx, Recorder(), service)
        made.append(bench)
        return bench

    yield make
    for bench in made:
        bench.ctx.close()


def _records(bench: BenchmarkJob) -> list[object]:
    transport = bench.ctx.existing_transport
    assert transport is not None
    return list(transport.command_log.peek())


def _left_in_tmp(testhost: TestHost) -> str:
    found = testhost.ssh(["sh", "-c", "ls -d /tmp/specadmin-servebench.* 2>/dev/null || true"])
    return found.stdout.strip()


def test_the_client_runs_on_the_host_as_the_units_user_and_leaves_nothing_behind(
    testhost: TestHost,
    job: Callable[..., BenchmarkJob],
    loopback_vllm: Callable[[], int],  # noqa: F811 (fixture)
) -> None:
    port = loopback_vllm()
    bench = job(port)
    assert "\nUser=vllm\n" in bench.ctx.request.unit_text  # the seed's service account
    result = hook.benchmark(bench)
    assert result.outcome == Outcome.OK, result.reason
    assert result.data["client"] == "host" and result.data["client_fallback"] == ""
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert run.url == f"http://127.0.0.1:{port} on gpu-loop (client on the host as vllm)"
    assert not run.incomplete and run.output_tok_s
    records = _records(bench)
    assert not [r for r in records if r.kind == FORWARD]  # type: ignore[attr-defined]
    runs = [r for r in records if r.kind == RUN]  # type: ignore[attr-defined]
    measured = [r for r in runs if "-I" in r.argv and "--probe" not in r.argv]  # type: ignore[attr-defined]
    assert len(measured) == 2  # one level, two repeats: one command each
    assert all(r.argv[0] == "setpriv" for r in measured)  # type: ignore[attr-defined]
    # the API key and the settings went on stdin, not into the recorded argv
    assert not any("num_requests" in " ".join(r.argv) for r in measured)  # type: ignore[attr-defined]
    log = "\n".join(bench.rec.lines)
    assert f"http://127.0.0.1:{port} with the client on gpu-loop as vllm" in log
    assert _left_in_tmp(testhost) == ""


def test_a_host_python_without_aiohttp_falls_back_to_the_forward_and_says_why(
    testhost: TestHost,
    job: Callable[..., BenchmarkJob],
    loopback_vllm: Callable[[], int],  # noqa: F811 (fixture)
) -> None:
    testhost.nsenter(["mkdir", "-p", "/opt/bare/bin"])
    testhost.write_file("/opt/bare/bin/python3", BARE_PYTHON)
    testhost.write_file("/opt/bare/bin/vllm", BARE_VLLM)
    testhost.nsenter(["chmod", "0755", "/opt/bare/bin/python3", "/opt/bare/bin/vllm"])
    port = loopback_vllm()
    bench = job(port, executable="/opt/bare/bin/vllm")
    result = hook.benchmark(bench)
    assert result.outcome == Outcome.OK, result.reason
    assert result.data["client"] == "worker"
    why = result.data["client_fallback"]
    assert why.startswith("the client could not run on gpu-loop: /opt/bare/bin/python3")
    assert "cannot import servebench and aiohttp" in why and "aiohttp" in why
    assert [r for r in _records(bench) if r.kind == FORWARD]  # type: ignore[attr-defined]
    run = BenchRun.objects.get(pk=result.data["bench_run"])
    assert run.url.startswith(f"http://127.0.0.1:{port} on gpu-loop (SSH port forward) (client")
    assert result.data["summary"].endswith(
        "(measured from the worker: the client could not run on the host)"
    )
    assert f"client in the worker, not on the host: {why}" in "\n".join(bench.rec.lines)
    assert _left_in_tmp(testhost) == ""


def test_the_package_sent_is_servebench_alone_and_unpacks_as_sent() -> None:
    files = package_files()
    assert "servebench/runner.py" in files and "servebench/gate.py" in files
    assert all(name.startswith("servebench/") and name.endswith(".py") for name in files)
    assert len(package_archive(files)) < 256 * 1024  # bounded: one small archive


def test_the_client_on_the_host_never_reads_a_prompt_file_named_by_stored_settings() -> None:
    client = OnHostClient(None, "/usr/bin/python3", (), "vllm", "/tmp/x", "")  # type: ignore[arg-type]
    settings = RunSettings(url="http://127.0.0.1:8000", prompts="/etc/shadow")
    with pytest.raises(BenchError, match="only the built-in prompt sets"):
        client.measure(settings)
