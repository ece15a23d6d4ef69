"""GPU-clean against a real systemd + sshd test host with the 8-GPU and vLLM doubles.

A unit runs the vLLM double whose EngineCore escapes the unit's cgroup and ignores
SIGTERM (fault `leftover_worker`): after `systemctl stop` it still holds memory on all
8 GPUs. The very functions the pipeline step calls (`hostops.gpu_clean`) must find
it, SIGTERM then SIGKILL it, and verify every GPU clean; another user's GPU process must
be left alone and named. The module boots its own host: these tests change GPU state.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from hostops.channel.ssh import SSHTransport
from hostops.gpu_clean import (
    CleanPolicy,
    ServiceIdentity,
    clean_gpus,
    format_mib,
    service_identity,
)
from hostops.processes import read_processes
from tests.deploys.conftest import transport_for
from tests.deploys.helpers import UNIT_DIR, unique, wait_for
from tests.doubles.gpu_state import H200_TOTAL_MIB
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost

REGISTER = (
    "import sys; sys.path.insert(0, '/usr/local/lib/gpu-double'); "
    "from doubles import gpu_state as g; c = g.load_config(); "
    "g.register(c, int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))"
)


@pytest.fixture(scope="module")
def gpuhost(module_testhost: TestHost) -> TestHost:
    return module_testhost


@pytest.fixture
def ssh(gpuhost: TestHost) -> Iterator[SSHTransport]:
    with transport_for(gpuhost) as t:
        yield t


@pytest.fixture
def clean_host(gpuhost: TestHost) -> Iterator[TestHost]:
    """Every test starts and ends with no GPU holder (whatever it left is killed)."""
    yield gpuhost
    pids = gpuhost.nsenter(["sh", "-c", "ls /run/gpu-double/*/ 2>/dev/null | sort -u"]).stdout
    for pid in {p for p in pids.split() if p.isdigit()}:
        gpuhost.nsenter(["kill", "-KILL", pid])


def start_vllm_unit(host: TestHost, *, env: str = "", tp: int = 8) -> str:
    """A unit running the vLLM double whose EngineCore escapes and ignores SIGTERM."""
    unit = unique("vllm-leak") + ".service"
    host.write_file(
        f"{UNIT_DIR}/{unit}",
        "[Service]\nType=exec\n"
        "Environment=VLLM_DOUBLE_FAULTS=leftover_worker VLLM_DOUBLE_LOAD_S=0.1 "
        f"VLLM_DOUBLE_CONFIG_DELAY_S=0 {env}\n"
        # port 0: the kernel picks a free one as the double binds (none is read back)
        "ExecStart=/usr/local/bin/vllm serve leaky --port 0 "
        f"--tensor-parallel-size {tp} --gpu-memory-utilization 0.8\n",
    )
    host.systemctl("daemon-reload", check=True)
    host.systemctl("start", unit, check=True)
    holders = wait_for(lambda: gpu_pids(host), timeout=20)
    assert holders, host.journal(unit)
    return unit


def gpu_pids(host: TestHost) -> set[int]:
    out = host.nsenter(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"]).stdout
    return {int(p) for p in out.split()}


def foreign_holder(host: TestHost, gpu: int, mib: int) -> int:
    """A process of user alice holding `mib` on `gpu` (registered like a CUDA context)."""
    script = "runuser -u alice -- python3 -c 'import time; time.sleep(600)' >/dev/null 2>&1 &"
    host.nsenter(["sh", "-c", script], check=True)
    pid = wait_for(lambda: host.nsenter(["pgrep", "-u", "alice", "python3"]).stdout, timeout=10)
    assert pid, "alice's process did not start"
    pid_int = int(str(pid).split()[0])
    host.nsenter([host.python, "-c", REGISTER, str(gpu), str(pid_int), str(mib)], check=True)
    return pid_int


def lines(log: list[str], word: str) -> list[str]:
    return [line for line in log if line.startswith(word)]


def test_escaped_engine_core_is_killed_and_all_gpus_verified_clean(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    unit = start_vllm_unit(clean_host)
    identity = service_identity(ssh, unit)
    [engine] = gpu_pids(clean_host)
    assert engine in identity.pids, "the EngineCore is part of the service before the stop"
    info = read_processes(ssh, [engine])[engine]
    assert info.cgroup == "/init.scope" and info.name == "VLLM::EngineCore"

    clean_host.systemctl("stop", unit, check=True)
    assert gpu_pids(clean_host) == {engine}, "the leftover survived systemctl stop"

    log: list[str] = []
    report = clean_gpus(ssh, identity, CleanPolicy(grace_s=1.0, timeout_s=30), log=log.append)

    assert report.clean, report.reason
    mib = int(0.8 * H200_TOTAL_MIB)
    [term] = lines(log, "SIGTERM")
    assert term.startswith(
        f"SIGTERM PID {engine} (VLLM::EngineCore, user root, {format_mib(8 * mib)}) on GPUs 0-7"
    ), term
    [kill] = lines(log, "SIGKILL")
    assert f"PID {engine}" in kill and "still alive 1 s after SIGTERM" in kill
    assert [k["signal"] for k in report.kills] == ["SIGTERM", "SIGKILL"]
    assert report.kills[0]["gpus"] == list(range(8)) and report.kills[0]["mib"] == 8 * mib
    assert "clean: GPUs 0-7 at or below 1,000 MiB" in log[-1]
    assert len(report.gpus) == 8 and all(g["used_mib"] == 0 for g in report.gpus)
    assert report.verified_at is not None and report.last_gone_at is not None
    assert gpu_pids(clean_host) == set()


def test_an_escaped_leftover_is_recognised_without_the_snapshot_of_the_service(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    """A worker that restarted mid-job has no list of the service's processes: the
    escaped EngineCore is still the service's (same user, vLLM title, init.scope)."""
    unit = start_vllm_unit(clean_host, tp=2)
    [engine] = gpu_pids(clean_host)
    clean_host.systemctl("stop", unit, check=True)
    identity = ServiceIdentity(unit=unit, cgroup=f"/system.slice/{unit}", user="root")
    log: list[str] = []
    report = clean_gpus(ssh, identity, CleanPolicy(grace_s=0.5), log=log.append)
    assert report.clean, report.reason
    assert "escaped the unit: user root, vLLM title, cgroup /init.scope" in lines(log, "SIGTERM")[0]
    assert engine not in gpu_pids(clean_host)


def test_another_users_gpu_process_is_never_killed_and_named(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    alice = foreign_holder(clean_host, gpu=5, mib=38 * 1024)
    identity = ServiceIdentity(unit="vllm-x.service", cgroup="/system.slice/vllm-x.service")
    log: list[str] = []
    report = clean_gpus(ssh, identity, CleanPolicy(timeout_s=5), log=log.append)
    assert not report.clean and report.kills == []
    assert report.reason.startswith(
        f"GPU 5 is held by PID {alice} (python3, user alice, 38 GiB)"
    ), report.reason
    assert "never killed unless the profile allows" in report.reason
    assert gpu_pids(clean_host) == {alice}, "alice's process is still there"

    # Not on a GPU the service uses: left alone, and the step succeeds.
    only_01 = ServiceIdentity(unit="vllm-x.service", visible_devices="0,1")
    report = clean_gpus(ssh, only_01, CleanPolicy(timeout_s=5), log=log.append)
    assert report.clean and report.kills == [], report.reason
    assert report.left_alone == [
        f"left alone: PID {alice} (python3, user alice, 38 GiB) on GPU 5, not used here"
    ]

    # Only where the profile allows it.
    report = clean_gpus(ssh, identity, CleanPolicy(kill_foreign=True, grace_s=2), log=log.append)
    assert report.clean, report.reason
    assert [(k["signal"], k["pid"], k["user"]) for k in report.kills] == [
        ("SIGTERM", alice, "alice")
    ]
    assert gpu_pids(clean_host) == set()


def test_the_gpus_are_those_cuda_reads_in_cuda_visible_devices_or_every_gpu_and_why(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    """`01` is GPU 1 to CUDA: GPU-clean once found no GPU for it and called the host clean
    without looking (docs/architecture.md, "Operations")."""
    alice = foreign_holder(clean_host, gpu=1, mib=2048)
    unit = {"unit": "vllm-x.service", "cgroup": "/system.slice/vllm-x.service"}
    log: list[str] = []
    report = clean_gpus(ssh, ServiceIdentity(**unit, visible_devices="01"), log=log.append)
    assert not report.clean and report.reason.startswith(f"GPU 1 is held by PID {alice}")
    assert log[0] == "GPUs to check: CUDA_VISIBLE_DEVICES='01' selects GPU 1"
    assert report.checked == "CUDA_VISIBLE_DEVICES='01' selects GPU 1"

    mig = ServiceIdentity(**unit, visible_devices="MIG-4f1c2a3b-aaaa-bbbb-cccc-000000000000")
    report = clean_gpus(ssh, mig, log=log.append)
    assert not report.clean and report.reason.startswith(f"GPU 1 is held by PID {alice}")
    assert "names a MIG device, not a whole GPU; checking every GPU" in report.checked

    report = clean_gpus(ssh, ServiceIdentity(**unit, visible_devices="0,a,1"), log=log.append)
    assert report.clean, report.reason  # CUDA stops at `a`: GPU 0 only
    assert (
        report.checked == "CUDA_VISIBLE_DEVICES='0,a,1' selects GPU 0 (CUDA stops reading at “a”)"
    )


def test_a_process_on_several_needed_gpus_is_named_with_all_of_them_and_its_total(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    # Another unit's vLLM on GPUs 0-7 once read "GPU 0 is held by PID … 1033 GiB": more
    # than an H200 has, the total of eight GPUs put on the first.
    alice = foreign_holder(clean_host, gpu=4, mib=38 * 1024)
    clean_host.nsenter(
        [clean_host.python, "-c", REGISTER, "5", str(alice), str(38 * 1024)], check=True
    )
    identity = ServiceIdentity(unit="vllm-x.service", cgroup="/system.slice/vllm-x.service")
    report = clean_gpus(ssh, identity, CleanPolicy(timeout_s=5), log=lambda line: None)
    assert not report.clean
    assert report.reason.startswith(
        f"GPUs 4-5 are held by PID {alice} (python3, user alice, 76 GiB)"
    ), report.reason


def test_memory_that_never_frees_fails_the_step_naming_each_gpu(
    clean_host: TestHost, ssh: SSHTransport
) -> None:
    config = json.loads(clean_host.read_file("/etc/gpu-double/config.json"))
    clean_host.write_file(
        "/etc/gpu-double/config.json", json.dumps(config | {"idle_used_mib": 1500})
    )
    try:
        report = clean_gpus(
            ssh, ServiceIdentity(visible_devices="3"), CleanPolicy(timeout_s=3, threshold_mib=1000)
        )
        assert not report.clean and report.polls >= 2
        assert report.reason == (
            "GPUs not clean after 3 s: GPU 3: 1,500 MiB used (threshold 1,000 MiB) with no "
            "compute process listed"
        )
        report = clean_gpus(ssh, ServiceIdentity(), CleanPolicy(threshold_mib=2000))
        assert report.clean and report.polls == 1
    finally:
        clean_host.write_file("/etc/gpu-double/config.json", json.dumps(config))
