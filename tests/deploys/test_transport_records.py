"""Every transport records what it did on the host (for the job steps' records), and every
SSH command is bounded on the host itself, not only by our wait for its channel."""

from __future__ import annotations

import secrets
import threading
from pathlib import Path

import pytest

from hostops.channel import CommandTimeout
from hostops.channel.local import LocalTransport
from hostops.channel.records import CommandLog, CommandRecord, records_json
from hostops.channel.ssh import SSHTransport
from tests.deploys.helpers import fake_host_key, unique, wait_for
from tests.doubles import gpu_state
from tests.doubles.nvml_double import NvmlDouble
from tests.testhost.host import TestHost


@pytest.mark.testhost
def test_ssh_commands_and_file_access_are_recorded_with_exit_codes(ssh: SSHTransport) -> None:
    ssh.command_log.take()
    path = f"/var/tmp/{unique('specadmin-rec')}"
    ssh.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    ssh.write_file_atomic(path, b"abc")
    assert ssh.read_file(path) == b"abc"
    assert ssh.read_file(path + ".absent") is None
    assert ssh.remove_file(path) and not ssh.remove_file(path)
    records = ssh.command_log.take()
    summary = [(r.kind, r.argv[0], r.exit_code) for r in records if r.kind != "connect"]
    assert summary == [
        ("run", "sh", 3),
        ("write", path, 0),
        ("rename", path, 0),
        ("read", path, 0),
        ("read", path + ".absent", 1),
        ("remove", path, 0),
        ("remove", path, 1),
    ]
    run = records[0] if records[0].kind == "run" else records[1]
    assert run.stderr_tail == "err" and run.stdout_bytes == 4
    assert run.bound_s == ssh.command_timeout and run.duration > 0
    assert ssh.command_log.take() == []


@pytest.mark.testhost
def test_a_timed_out_command_does_not_keep_running_on_the_host(
    ssh: SSHTransport, testhost: TestHost
) -> None:
    seconds = str(secrets.randbelow(90000) + 10000)  # a command line nothing else runs
    marker = f"^sleep {seconds}$"
    with pytest.raises(CommandTimeout) as info:
        # A child of the shell too: timeout(1) ends the whole process group.
        ssh.run(["sh", "-c", f"sleep {seconds} & sleep {seconds}"], timeout=1.0)
    assert info.value.timeout == 1.0

    def gone() -> bool:
        return testhost.nsenter(["pgrep", "-f", marker]).returncode == 1

    assert wait_for(gone, timeout=10), "the command kept running on the host"
    [record] = [r for r in ssh.command_log.take() if r.kind == "run"]
    assert record.exit_code is None and "timed out" in record.error


def test_local_commands_dbus_and_nvml_are_recorded(tmp_path: Path) -> None:
    cfg = gpu_state.GpuConfig(gpu_count=1, state_dir=str(tmp_path), uuid_seed="rec")
    with LocalTransport(nvml=NvmlDouble(cfg)) as t:
        t.run(["true"])
        t.gpu_status()
        t.write_file_atomic(str(tmp_path / "f"), b"x")
        with pytest.raises(CommandTimeout):
            t.run(["sleep", "5"], timeout=0.2)
        kinds = [(r.kind, r.exit_code) for r in t.command_log.take()]
    assert kinds == [("run", 0), ("nvml", 0), ("write", 0), ("rename", 0), ("run", None)]


def test_long_polls_fold_into_one_line_per_command_without_losing_any() -> None:
    log = CommandLog()
    for i in range(400):
        argv = ("curl", "/health") if i % 2 else ("journalctl", "-u", "x")
        log.add(CommandRecord("run", argv, 7 if i % 2 else 0, 0.01, 1000.0 + i))
    data = records_json(log.take(), full=100)
    assert data["count"] == 400 and len(data["records"]) == 100
    folded = {tuple(f["argv"]): f for f in data["folded"]}
    assert folded[("curl", "/health")]["count"] == 150
    assert folded[("curl", "/health")]["exits"] == {"7": 150}
    assert folded[("journalctl", "-u", "x")]["exits"] == {"0": 150}
    assert sum(f["count"] for f in data["folded"]) + len(data["records"]) == 400


class _RacingChannel:
    """A channel whose EOF and CLOSE arrive between two of our checks: `eof_received` is
    still False when first read, and both are set by the time `closed` is read."""

    def __init__(self) -> None:
        self.eof_reads = 0
        self.closed = True
        self.status_event = threading.Event()
        self.status_event.set()

    @property
    def eof_received(self) -> bool:
        self.eof_reads += 1
        return self.eof_reads > 1

    def exec_command(self, command: bytes) -> None:
        pass

    def shutdown_write(self) -> None:
        pass

    def recv_ready(self) -> bool:
        return False

    def recv_stderr_ready(self) -> bool:
        return False

    def recv_exit_status(self) -> int:
        return 7

    def close(self) -> None:
        pass


def test_a_command_whose_eof_and_close_arrive_together_is_finished_not_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Seen on a busy machine: `curl` refused in 10 ms during a readiness wait came back
    as ConnectionLost, because paramiko's thread handled EOF and CLOSE between the check
    for EOF and the check for a closed channel."""
    key = fake_host_key()  # nothing connects: the channel is the fake above
    pinned = f"{key.key_type} {key.base64}"
    t = SSHTransport("127.0.0.1", 1, pinned_host_key=pinned, key_filename="/nonexistent")
    monkeypatch.setattr(t, "_open", lambda what, opener, deadline: _RacingChannel())
    result = t.run(["curl", "http://127.0.0.1:1/health"], timeout=5)
    assert result.exit_code == 7
