"""Output from a hostile host is bounded, on the real test host over real SSH: a 200 MB
unit file, a FIFO or a device where the unit should be, an `nvidia-smi` that prints
200 MB on each stream, one that prints a PID that is not a number.

Memory is measured with tracemalloc (what Python allocated while the call ran, its peak),
not with a clock; stored text by its length (docs/architecture.md, "Operations").
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from audit.models import AuditEvent
from deploys.connect import transport_for
from deploys.jobs import queue, runner
from deploys.models import Host
from deploys.services.deploy_requests import deploy_request_create
from hostops.channel import FileRefused, Transport
from hostops.channel.bounds import MIB, STORED_STRING_CHARS, STORED_TEXT_CHARS
from hostops.channel.ssh import SSHTransport
from tests.deploys.helpers import UNIT_DIR, make_host, make_users, unique
from tests.testhost.host import TestHost
from tests.units.factories import baseline
from units.services import profile_create

pytestmark = pytest.mark.testhost
T = TypeVar("T")
HUGE = 200 * 1000 * 1000  # what the host serves: 200 MB
MEMORY_BOUND = 48 * MIB  # what a bounded reader may allocate for it, at most


def peak_allocated(call: Callable[[], T]) -> tuple[T | Exception, int]:
    """(the call's result or exception, peak bytes Python allocated while it ran)."""
    tracemalloc.start()
    try:
        try:
            outcome: T | Exception = call()
        except Exception as exc:  # returned to the test, which judges it
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(autouse=True)
def queued(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(queue, "async_task", lambda *args, **kwargs: None)


@pytest.fixture
def site(testhost: TestHost, transactional_db: None) -> Host:
    return make_host(testhost)


@pytest.fixture
def unit_name(testhost: TestHost) -> Iterator[str]:
    name = unique("bounded")
    yield name
    testhost.nsenter(["rm", "-f", f"{UNIT_DIR}/{name}.service"])


# --------------------------------------------------------------------------------------
# files


def test_a_200_mb_unit_file_on_the_host_is_refused_by_its_size_without_reading_it(
    testhost: TestHost, site: Host, unit_name: str
) -> None:
    path = f"{UNIT_DIR}/{unit_name}.service"
    testhost.nsenter(["truncate", "-s", str(HUGE), path], check=True)  # sparse
    olga, _ = make_users()
    version = profile_create(data=baseline(name=unit_name), created_by=None).versions.get()

    def request() -> Any:
        return deploy_request_create(
            profile_version=version, host=site, requested_by=olga, acknowledge_warnings=True
        )

    outcome, peak = peak_allocated(request)
    assert isinstance(outcome, ValidationError), outcome
    message = " ".join(outcome.messages)
    assert f"{path} on the host was not read: it is 200,000,000 bytes" in message, message
    assert "more than the 262,144 specadmin reads" in message
    assert peak < MEMORY_BOUND, f"{peak:,} bytes allocated for a refused file"


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (["mkfifo", "{path}"], "it is a FIFO, not a regular file"),
        (["ln", "-s", "/dev/null", "{path}"], "a character device (a masked unit"),
        (["ln", "-s", "/dev/zero", "{path}"], "a character device"),
    ],
)
def test_a_fifo_or_a_device_where_the_unit_should_be_is_never_opened(
    testhost: TestHost, unit_name: str, make: list[str], what: str
) -> None:
    path = f"{UNIT_DIR}/{unit_name}.service"
    testhost.nsenter([word.format(path=path) for word in make], check=True)
    # A short command timeout: opening the FIFO would hang the host's sftp-server there.
    t = SSHTransport(
        testhost.host,
        testhost.port,
        testhost.user,
        pinned_host_key=testhost.host_key,
        key_filename=testhost.key_path,
        command_timeout=10,
    )
    with t:
        with pytest.raises(FileRefused) as info:
            t.read_file(path)
        assert what in str(info.value)
        assert t.run(["true"]).ok, "the connection is still usable"


# --------------------------------------------------------------------------------------
# a probe against a hostile nvidia-smi

# Prints `$1`-dependent output: the GPU query and the compute-apps query are separate runs.
_SMI = """#!/bin/sh
case "$1" in
--query-gpu=*) {gpu} ;;
*) {apps} ;;
esac
"""
FLOOD = f"head -c {HUGE} /dev/zero | tr '\\0' x; head -c {HUGE} /dev/zero | tr '\\0' y >&2"
NON_NUMERIC_PID = {
    "gpu": 'echo "0, NVIDIA H200, GPU-0aa1, 0, 143771"',
    "apps": 'echo "GPU-0aa1, 12ab, 100, python"',
}


@pytest.fixture
def hostile_smi(testhost: TestHost) -> Iterator[Callable[..., Callable[[Host], Transport]]]:
    """An nvidia-smi of the test's own at a path of its own; a `connect` that uses it."""
    path = f"/var/tmp/{unique('nvidia-smi-hostile')}"

    def install(gpu: str, apps: str = "exit 0") -> Callable[[Host], Transport]:
        testhost.write_file(path, _SMI.format(gpu=gpu, apps=apps), mode=0o755)

        def connect(host: Host) -> Transport:
            transport = transport_for(host)
            transport.nvidia_smi = path
            return transport

        return connect

    yield install
    testhost.nsenter(["rm", "-f", path])


def probe(site: Host, connect: Callable[[Host], Transport]) -> Host:
    Host.objects.filter(pk=site.pk).update(probe_queued_at=timezone.now())
    runner.run_probe(site.pk, None, connect=connect)
    site.refresh_from_db()
    return site


def test_an_nvidia_smi_printing_200_mb_on_each_stream_is_capped_and_stored_clipped(
    site: Host, hostile_smi: Callable[..., Callable[[Host], Transport]]
) -> None:
    connect = hostile_smi(gpu=FLOOD)
    outcome, peak = peak_allocated(lambda: probe(site, connect))
    assert isinstance(outcome, Host), outcome
    assert peak < MEMORY_BOUND, f"{peak:,} bytes allocated while 400 MB arrived"

    assert site.probe_queued_at is None and site.probed_at is not None
    assert site.systemd_version == 252, "the other facts were still read"
    gpu_error = next(line for line in site.probe_error.splitlines() if line.startswith("GPUs:"))
    assert "nvidia-smi printed more than 16,777,216 bytes" in gpu_error
    assert "not a GPU listing" in gpu_error
    assert len(site.probe_error) <= STORED_TEXT_CHARS
    event = AuditEvent.objects.filter(kind="host.probed", object_id=str(site.pk)).latest("id")
    assert all(len(error) <= STORED_STRING_CHARS for error in event.payload["errors"])
    assert len(str(event.payload)) < 4 * STORED_STRING_CHARS


def test_a_non_numeric_pid_from_nvidia_smi_is_a_recorded_probe_error(
    site: Host, hostile_smi: Callable[..., Callable[[Host], Transport]]
) -> None:
    site = probe(site, hostile_smi(**NON_NUMERIC_PID))
    assert site.probe_queued_at is None, "the probe finished and says so"
    assert "GPUs: unexpected nvidia-smi compute-apps line: 'GPU-0aa1, 12ab, 100, python'" in (
        site.probe_error
    )
    assert site.systemd_version == 252
    event = AuditEvent.objects.filter(kind="host.probed", object_id=str(site.pk)).latest("id")
    assert any("12ab" in error for error in event.payload["errors"])
