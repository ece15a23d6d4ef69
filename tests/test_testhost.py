"""The test host and the doubles inside it behave like a GPU host running vLLM under systemd."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.ports import listening_port, service_port
from tests.testhost import TestHost, find_leftovers, pick_free_ports, reap_leftovers
from tests.testhost import host as host_module

pytestmark = pytest.mark.testhost

REPO = Path(__file__).resolve().parents[1]
TRIXIE = Path("/var/tmp/specadmin-trixie")


def wait_for(what: str, check: Callable[[], Any], timeout: float = 20, every: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(every)


def gpu_used(host: TestHost) -> dict[int, int]:
    res = host.ssh(
        ["nvidia-smi", "--query-gpu=index,memory.used", "--format=csv,noheader,nounits"],
        check=True,
    )
    return {int(i): int(m) for i, m in (line.split(", ") for line in res.stdout.splitlines())}


def install_vllm_unit(
    host: TestHost,
    unit: str,
    *,
    port: int,
    gpus: str,
    extra_args: str = "",
    env: dict[str, str] | None = None,
) -> None:
    environment = {"CUDA_VISIBLE_DEVICES": gpus, "VLLM_DOUBLE_LOAD_S": "1"} | (env or {})
    env_lines = "".join(f"Environment={k}={v}\n" for k, v in environment.items())
    host.write_file(
        f"/etc/systemd/system/{unit}",
        "[Unit]\nDescription=vLLM double under test\n\n[Service]\nType=exec\n"
        f"{env_lines}"
        f"ExecStart=/usr/local/bin/vllm serve Qwen/Qwen3-8B --host 127.0.0.1 --port {port} "
        f"{extra_args}\nTimeoutStopSec=5\n",
    )
    host.ssh(["systemctl", "daemon-reload"], check=True)


def healthy(host: TestHost, port: int) -> bool:
    res = host.ssh(["curl", "-sf", "-o", "/dev/null", f"http://127.0.0.1:{port}/health"])
    return res.returncode == 0


def test_booted_host_answers_over_ssh_with_running_systemd(testhost: TestHost) -> None:
    res = testhost.ssh(["systemctl", "is-system-running"])
    assert res.stdout.strip() in ("running", "degraded"), res
    assert testhost.ssh(["hostname"]).stdout.strip() == testhost.name
    assert testhost.ssh(["id", "-u"]).stdout.strip() == "0"


def test_root_lingers_so_a_login_never_starts_or_waits_for_its_user_manager(
    testhost: TestHost,
) -> None:
    """tests/testhost/README.md: without lingering, a login more than 10 s after the last
    one starts user@0.service inside sshd's session set-up and waits for it."""
    linger = testhost.ssh(["loginctl", "show-user", "root", "--property=Linger", "--value"])
    assert linger.stdout.strip() == "yes", linger
    testhost.ssh(["true"], check=True)
    assert testhost.ssh(["systemctl", "is-active", "user@0.service"]).stdout.strip() == "active"
    starts = testhost.journal("user@0.service").count("Started user@0.service")
    assert starts == 1, "started once, at boot, whatever the logins since"


def test_pinned_host_key_is_accepted_and_a_different_key_refused(
    testhost: TestHost, tmp_path: Path
) -> None:
    assert testhost.host_key.startswith(f"[127.0.0.1]:{testhost.port} ssh-ed25519 AAAA")
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")],
        check=True,
    )
    other = (tmp_path / "other.pub").read_text().split()
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[127.0.0.1]:{testhost.port} {other[0]} {other[1]}\n")
    options = [o.replace(str(testhost.known_hosts), str(wrong)) for o in testhost.ssh_options()]
    res = subprocess.run(
        ["ssh", *options, "-o", "LogLevel=ERROR", "root@127.0.0.1", "true"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert res.returncode == 255
    assert "Host key verification failed" in res.stderr
    assert testhost.ssh(["true"]).returncode == 0


def test_nvidia_smi_double_lists_eight_idle_h200(testhost: TestHost) -> None:
    listing = testhost.ssh(["nvidia-smi", "-L"], check=True).stdout.splitlines()
    assert len(listing) == 8
    assert listing[0].startswith("GPU 0: NVIDIA H200 (UUID: GPU-")
    csv = testhost.ssh(
        ["nvidia-smi", "--query-gpu=index,name,memory.used,memory.total", "--format=csv"],
        check=True,
    ).stdout.splitlines()
    assert csv[0] == "index, name, memory.used [MiB], memory.total [MiB]"
    assert csv[1] == "0, NVIDIA H200, 0 MiB, 143771 MiB"


def test_vllm_unit_serves_on_its_gpus_and_stop_frees_memory(testhost: TestHost) -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4}'
    install_vllm_unit(
        testhost,
        "vllm-ok.service",
        port=0,
        gpus="2,3,5",
        extra_args=f"--tensor-parallel-size 2 --speculative-config '{spec}'",
        env={"VLLM_DOUBLE_ACCEPTED_PER_STEP": "3"},
    )
    testhost.ssh(["systemctl", "start", "vllm-ok.service"], check=True)
    try:
        port = listening_port(testhost, "vllm-ok.service")
        wait_for("/health", lambda: healthy(testhost, port), timeout=30)
        used = gpu_used(testhost)
        assert used[2] == used[3] == int(0.9 * 143771)
        assert all(used[i] == 0 for i in (0, 1, 4, 5, 6, 7))
        apps = testhost.ssh(
            ["nvidia-smi", "--query-compute-apps=pid,process_name,used_memory", "--format=csv"],
            check=True,
        ).stdout.splitlines()
        assert apps[0] == "pid, process_name, used_gpu_memory [MiB]"
        assert len(apps) == 3 and all(", VLLM::EngineCore, 129393 MiB" in a for a in apps[1:])

        body = json.dumps(
            {
                "model": "Qwen/Qwen3-8B",
                "prompt": "hello there",
                "max_tokens": 9,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        )
        out = testhost.ssh(
            ["curl", "-sN", f"http://127.0.0.1:{port}/v1/completions", "-d", body], check=True
        ).stdout
        events = [line[6:] for line in out.splitlines() if line.startswith("data: ")]
        assert events[-1] == "[DONE]"
        chunks = [json.loads(e) for e in events[:-1]]
        texts = [c["choices"][0]["text"] for c in chunks if c["choices"]]
        assert [len(t.split()) for t in texts] == [1, 4, 4]  # prefill, then 3 accepted + bonus
        assert chunks[-1]["usage"]["completion_tokens"] == 9
        metrics = testhost.ssh(["curl", "-s", f"http://127.0.0.1:{port}/metrics"]).stdout
        assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="Qwen/Qwen3-8B"} 2.0' in (
            metrics
        )
        assert "vllm:spec_decode_num_draft_tokens_total" in metrics
        assert 'vllm:spec_decode_num_accepted_tokens_total{engine="0",' in metrics
    finally:
        testhost.ssh(["systemctl", "stop", "vllm-ok.service"])
    wait_for("GPU memory freed", lambda: not any(gpu_used(testhost).values()), timeout=10)


def test_the_demo_profiles_unit_runs_as_user_vllm_from_opt_vllm_and_holds_its_gpus(
    testhost: TestHost,
) -> None:
    # The README's tour deploys the demo profiles (User=vllm, /opt/vllm/bin/vllm) here.
    testhost.write_file(
        "/etc/systemd/system/vllm-demo.service",
        "[Service]\nType=exec\nUser=vllm\nGroup=vllm\n"
        "Environment=CUDA_VISIBLE_DEVICES=6,7 VLLM_DOUBLE_LOAD_S=1\n"
        "ExecStart=/opt/vllm/bin/vllm serve /models/m --port 0 -tp 2\nTimeoutStopSec=5\n",
    )
    testhost.ssh(["systemctl", "daemon-reload"], check=True)
    testhost.ssh(["systemctl", "start", "vllm-demo.service"], check=True)
    try:
        port = listening_port(testhost, "vllm-demo.service")
        wait_for("/health", lambda: healthy(testhost, port), timeout=30)
        used = gpu_used(testhost)
        assert used[6] == used[7] == int(0.9 * 143771)
    finally:
        testhost.ssh(["systemctl", "stop", "vllm-demo.service"])
    wait_for("GPU memory freed", lambda: not any(gpu_used(testhost).values()), timeout=10)


def test_leftover_worker_escapes_stop_and_keeps_gpu_memory(testhost: TestHost) -> None:
    install_vllm_unit(
        testhost,
        "vllm-leftover.service",
        port=0,
        gpus="6",
        env={"VLLM_DOUBLE_FAULTS": "leftover_worker"},
    )
    testhost.ssh(["systemctl", "start", "vllm-leftover.service"], check=True)
    port = listening_port(testhost, "vllm-leftover.service")
    wait_for("/health", lambda: healthy(testhost, port), timeout=30)
    testhost.ssh(["systemctl", "stop", "vllm-leftover.service"], check=True)
    state = testhost.ssh(["systemctl", "is-active", "vllm-leftover.service"]).stdout.strip()
    assert state == "inactive"
    apps = testhost.ssh(
        [
            "nvidia-smi",
            "--query-compute-apps=pid,process_name,used_memory",
            "--format=csv,noheader,nounits",
        ]
    ).stdout.splitlines()
    try:
        assert len(apps) == 1, apps
        pid, name, mib = apps[0].split(", ")
        # The next start on that GPU fails the way vLLM does when memory is taken.
        install_vllm_unit(testhost, "vllm-next.service", port=0, gpus="6")
        testhost.ssh(["systemctl", "start", "vllm-next.service"], check=True)
        wait_for(
            "next start failed",
            lambda: (
                testhost.ssh(["systemctl", "is-failed", "vllm-next.service"]).stdout.strip()
                == "failed"
            ),
        )
        assert "ValueError: Free memory on device cuda:6" in testhost.journal("vllm-next.service")
        assert name == "VLLM::EngineCore"
        assert gpu_used(testhost)[6] == int(mib) > 0
        ps = testhost.ssh(["ps", "-o", "comm=,args=", "-p", pid]).stdout
        assert ps.startswith("VLLM::EngineCor ")  # comm is cut at 15 characters, like real
        assert "VLLM::EngineCore" in ps
        assert pid not in testhost.ssh(["pgrep", "-f", "vllm"]).stdout.split()  # pkill -f misses it
    finally:
        testhost.ssh(["pkill", "-KILL", "-x", "VLLM::EngineCor"])
    wait_for("GPU memory freed", lambda: gpu_used(testhost)[6] == 0, timeout=10)


def test_never_healthy_serves_503_and_stays_active(testhost: TestHost) -> None:
    unit = "vllm-unhealthy.service"
    install_vllm_unit(testhost, unit, port=0, gpus="1", env={"VLLM_DOUBLE_FAULTS": "never_healthy"})
    testhost.ssh(["systemctl", "start", unit], check=True)
    try:
        curl = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}"]
        url = f"http://127.0.0.1:{listening_port(testhost, unit)}/health"
        wait_for("HTTP up", lambda: testhost.ssh([*curl, url]).stdout == "503", timeout=30)
        assert testhost.ssh(["systemctl", "is-active", unit]).stdout.strip() == "active"
    finally:
        testhost.ssh(["systemctl", "stop", unit])
    wait_for("GPU memory freed", lambda: gpu_used(testhost)[1] == 0, timeout=10)


def test_crash_after_start_fails_the_unit_and_frees_memory(testhost: TestHost) -> None:
    port = service_port()
    unit = "vllm-crash.service"
    install_vllm_unit(
        testhost,
        unit,
        port=port,
        gpus="4",
        env={"VLLM_DOUBLE_FAULTS": "crash_after_start", "VLLM_DOUBLE_CRASH_AFTER_S": "1"},
    )
    testhost.ssh(["systemctl", "reset-failed", unit])
    testhost.ssh(["systemctl", "start", unit], check=True)
    wait_for("healthy first", lambda: healthy(testhost, port), timeout=30)
    wait_for(
        "unit failed",
        lambda: testhost.ssh(["systemctl", "is-failed", unit]).stdout.strip() == "failed",
    )
    assert "illegal memory access" in testhost.journal(unit)
    assert gpu_used(testhost)[4] == 0


def test_ignore_sigterm_makes_stop_wait_for_the_timeout(testhost: TestHost) -> None:
    unit = "vllm-stubborn.service"
    install_vllm_unit(
        testhost, unit, port=0, gpus="7", env={"VLLM_DOUBLE_FAULTS": "ignore_sigterm"}
    )
    testhost.ssh(["systemctl", "start", unit], check=True)
    port = listening_port(testhost, unit)
    wait_for("/health", lambda: healthy(testhost, port), timeout=30)
    testhost.ssh(["systemctl", "stop", unit])
    journal = wait_for("timeout in journal", lambda: testhost.journal(unit, output="short"))
    assert "ignoring SIGTERM" in journal
    # TimeoutStopSec= ran out, then SIGKILL (systemd's own words, src/core/service.c).
    assert "State 'stop-sigterm' timed out. Killing." in journal
    assert gpu_used(testhost)[7] == 0


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ('{"method": "ngram", "num_speculative_tokens": 4', "argument --speculative-config"),
        (
            '{"method": "ngram", "num_speculative_tokens": 4, "lookup_max": 4}',
            "Unexpected keyword argument",
        ),
    ],
    ids=["invalid-json", "unknown-key"],
)
def test_bad_speculative_config_fails_the_unit_with_the_error_in_the_journal(
    testhost: TestHost, spec: str, expected: str
) -> None:
    unit = "vllm-badspec.service"
    install_vllm_unit(  # port 0: it fails before binding one
        testhost, unit, port=0, gpus="0", extra_args=f"--speculative-config '{spec}'"
    )
    testhost.ssh(["systemctl", "reset-failed", unit])
    testhost.ssh(["systemctl", "start", unit], check=True)  # Type=exec: started at exec
    wait_for(
        "unit failed",
        lambda: testhost.ssh(["systemctl", "is-failed", unit]).stdout.strip() == "failed",
    )
    journal = wait_for("error in journal", lambda: expected in testhost.journal(unit) and 1)
    assert journal
    assert gpu_used(testhost)[0] == 0


def test_factory_boots_hosts_in_parallel_on_distinct_ports(testhost_factory: Any) -> None:
    hosts = testhost_factory(2, gpu_count=2)
    assert len({h.port for h in hosts}) == 2
    for host in hosts:
        assert host.ssh(["systemctl", "is-system-running"]).stdout.strip() in (
            "running",
            "degraded",
        )
        assert len(host.ssh(["nvidia-smi", "-L"]).stdout.splitlines()) == 2
        assert host.boot_seconds > 0
        host.write_file("/run/marker", "x\n")
        assert host.nsenter(["cat", "/run/marker"]).stdout == "x\n"


@pytest.mark.parametrize(
    "journal_readable", [True, False], ids=["journal-readable", "journal-unreadable"]
)
def test_a_host_whose_ssh_port_is_taken_after_it_was_picked_boots_on_another_port(
    testhost_factory: Any, monkeypatch: pytest.MonkeyPatch, journal_readable: bool
) -> None:
    """Another process listens on the picked port before sshd in the container binds it (as
    any process of this shared machine may): the boot is retried on a newly picked port,
    also where the container's journal cannot be read in time (a loaded machine)."""
    intruders: list[socket.socket] = []
    if not journal_readable:
        monkeypatch.setattr(host_module, "_sshd_logged_port_taken", lambda host: False)

    def pick_then_lose_the_first(count: int, **kwargs: Any) -> list[int]:
        ports = pick_free_ports(count, **kwargs)
        if not intruders:
            intruders.append(socket.create_server((host_module.LOOPBACK, ports[0])))
        return ports

    monkeypatch.setattr(host_module, "pick_free_ports", pick_then_lose_the_first)
    try:
        [host] = testhost_factory(1, gpu_count=1, install_doubles=False, timeout=90)
        [intruder] = intruders
        assert host.port != intruder.getsockname()[1]
        assert host.ssh(["systemctl", "is-system-running"]).stdout.strip() in (
            "running",
            "degraded",
        )
    finally:
        for s in intruders:
            s.close()


def test_crashed_run_is_reaped(tmp_path: Path) -> None:
    """A process that boots a host and dies without teardown leaves nothing after reaping."""
    script = (
        "import json, os\n"
        "from tests.testhost import boot_host\n"
        "h = boot_host(install_doubles=False)\n"
        "print(json.dumps(h.to_json()), flush=True)\n"
        "os._exit(0)\n"  # skips atexit: a crash
    )
    res = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert res.returncode == 0, res.stderr
    base = json.loads(res.stdout)["base"]
    assert any(left.base == base for left in find_leftovers())
    reaped = reap_leftovers()
    assert base in [r.base for r in reaped]
    assert not Path(base).exists()
    assert all(left.base != base for left in find_leftovers(include_live=True))


def test_cli_up_status_down(tmp_path: Path) -> None:
    cli = [sys.executable, "-m", "tests.testhost"]
    up = subprocess.run(
        [*cli, "up", "--gpus", "1"], cwd=REPO, capture_output=True, text=True, timeout=180
    )
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout.splitlines()[0])
    try:
        assert {"host", "port", "user", "key_path", "host_key", "name", "nspawn_pid", "root"} <= (
            info.keys()
        )
        known = tmp_path / "known_hosts"
        known.write_text(info["host_key"] + "\n")
        res = subprocess.run(
            [
                "ssh",
                "-i",
                info["key_path"],
                "-p",
                str(info["port"]),
                "-o",
                f"UserKnownHostsFile={known}",
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                "BatchMode=yes",
                f"{info['user']}@{info['host']}",
                "systemctl is-system-running",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert res.stdout.strip() in ("running", "degraded"), res.stderr
        status = subprocess.run([*cli, "status"], cwd=REPO, capture_output=True, text=True)
        assert info["name"] in status.stdout
        assert find_leftovers() == [] or all(x.base != info["base"] for x in find_leftovers())
    finally:
        down = subprocess.run(
            [*cli, "down", info["name"]], cwd=REPO, capture_output=True, text=True, timeout=60
        )
    assert down.returncode == 0, down.stderr
    assert not Path(info["base"]).exists()
    # `down` returns only once the container is gone: no process left, not even a zombie
    # waiting for the machine's init to reap it (the CLI is not nspawn's parent).
    assert not Path(f"/proc/{info['nspawn_pid']}").exists()


@pytest.mark.slow
@pytest.mark.skipif(
    not (TRIXIE / "usr/sbin/sshd").exists(), reason="no Debian 13 root at /var/tmp/specadmin-trixie"
)
def test_debian_trixie_lower_boots_with_systemd_257(testhost_factory: Any) -> None:
    [host] = testhost_factory(1, lower=TRIXIE, gpu_count=1)
    version = host.ssh(["systemctl", "--version"]).stdout.split()[1]
    assert int(version) >= 257
    assert host.ssh(["nvidia-smi", "-L"]).stdout.startswith("GPU 0: NVIDIA H200")
    port = service_port()
    install_vllm_unit(host, "vllm.service", port=port, gpus="0")
    host.ssh(["systemctl", "start", "vllm.service"], check=True)
    probe = f"import urllib.request as u; u.urlopen('http://127.0.0.1:{port}/health', timeout=2)"
    wait_for("/health", lambda: host.ssh([host.python, "-c", probe]).returncode == 0, timeout=30)
    assert gpu_used(host)[0] > 0
