"""SSHTransport against a real systemd + sshd test host, over real SSH."""

from __future__ import annotations

import gc
import os
import posixpath
import secrets
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hostops.channel import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectionLost,
    GpuUnavailable,
    HostKeyMismatch,
    HostUnreachable,
    RemoteCommandFailed,
    TransportError,
    UnitPushError,
    push_unit,
    restore_backup,
)
from hostops.channel.bounds import MAX_STDERR_BYTES
from hostops.channel.push import BACKUP_SUFFIX, sha256_hex
from hostops.channel.ssh import (
    SSHTransport,
    fingerprint_sha256,
    parse_pinned_key,
    probe_host_key,
    quote_argv,
)
from tests.deploys.helpers import (
    UNIT_DIR,
    pending_channel_opens,
    sshd_serving,
    sshd_stalled,
    unique,
    wait_for,
)
from tests.ports import refusing_port
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost


def keygen(tmp_path: Path, name: str, key_type: str = "ed25519") -> Path:
    path = tmp_path / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", key_type, "-N", "", "-C", name, "-f", str(path)], check=True
    )
    return path


def ssh_keygen_fingerprint(pub_line: str, tmp_path: Path) -> str:
    f = tmp_path / f"fp-{secrets.token_hex(4)}.pub"
    f.write_text(pub_line + "\n")
    out = subprocess.run(["ssh-keygen", "-l", "-f", str(f)], capture_output=True, text=True)
    return out.stdout.split()[1]


# --------------------------------------------------------------------------------------
# connection, timing


def test_connect_reuse_and_round_trip_times(
    make_transport: Callable[..., SSHTransport], capsys: pytest.CaptureFixture[str]
) -> None:
    t = make_transport()
    started = time.monotonic()
    t.connect()
    connect_s = time.monotonic() - started
    first = t._transport()
    times = [t.run(["true"]).duration for _ in range(10)]
    assert t._transport() is first, "the connection must be reused between commands"
    with capsys.disabled():
        print(
            f"\n[ssh timing] connect {connect_s * 1000:.0f} ms (handshake+auth "
            f"{(t.last_connect_seconds or 0) * 1000:.0f} ms); `true` round trip median "
            f"{statistics.median(times) * 1000:.0f} ms, min {min(times) * 1000:.0f} ms, "
            f"max {max(times) * 1000:.0f} ms"
        )


def test_reconnects_after_connection_dropped(ssh: SSHTransport) -> None:
    ssh.run(["true"])
    ssh._transport().close()  # as if the network dropped it between two steps
    assert ssh.run(["echo", "again"]).stdout == b"again\n"


# --------------------------------------------------------------------------------------
# run


NASTY = [
    "a b",
    "  leading and trailing  ",
    "'",
    '"',
    'it\'s "quoted"',
    "$HOME",
    "${PATH}",
    "`id`",
    "$(id)",
    ";",
    "; rm -rf /nonexistent",
    "&&",
    "|",
    ">",
    "<",
    "*",
    "~",
    "#comment",
    "new\nline",
    "tab\there",
    "",
    "-n",
    "--",
    "\\",
    "back\\slash",
    "!",
    "%s %d",
    "é ü 漢字",
]


def test_run_passes_every_argument_verbatim(ssh: SSHTransport) -> None:
    result = ssh.run(["printf", "%s\\0", *NASTY])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.split(b"\0")[:-1] == [a.encode() for a in NASTY]


def test_run_non_utf8_argument_bytes(ssh: SSHTransport) -> None:
    raw = b"\xff\xfe-not-utf8-\x80"
    result = ssh.run(["printf", "%s", raw])
    assert result.stdout == raw


def test_quote_argv_is_the_only_quoting() -> None:
    assert quote_argv(["echo", "a b", "$x"]) == b"echo 'a b' '$x'"


def test_exit_codes_and_stderr(ssh: SSHTransport) -> None:
    r = ssh.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
    assert (r.exit_code, r.stdout, r.stderr) == (7, b"out\n", b"err\n")
    assert not r.ok
    with pytest.raises(RemoteCommandFailed, match="exit code 7"):
        r.check(["sh"])
    missing = ssh.run(["no-such-command-specadmin"])
    assert missing.exit_code == 127
    assert ssh.run(["true"]).ok


def test_large_output_on_both_streams_does_not_deadlock(
    ssh: SSHTransport, testhost: TestHost
) -> None:
    # Interleaved writes: a reader that drained only stdout would block the writer on a
    # full stderr window (and vice versa).
    script = (
        "import sys\n"
        "o, e = sys.stdout.buffer, sys.stderr.buffer\n"
        "for i in range(96):\n"
        "    o.write(b'o' * 65536); e.write(b'e' * 65536); o.flush(); e.flush()\n"
    )
    # A deadlock shows as CommandTimeout; no wall-clock bound (the machine may be busy).
    r = ssh.run([testhost.python, "-c", script], timeout=120)
    assert r.exit_code == 0, r.stderr[-500:]
    assert len(r.stdout) == 96 * 65536 and r.stdout_complete  # 6 MiB, under its cap
    assert set(r.stdout) == {ord("o")}
    # stderr past its cap: read to the end (no deadlock) but only its ends kept, marked.
    assert r.stderr_dropped == 96 * 65536 - MAX_STDERR_BYTES
    head, marker, tail = r.stderr.partition(b"\n[")
    assert set(head) == set(tail.partition(b"]\n")[2]) == {ord("e")}
    assert b"5,242,880 bytes of stderr not kept" in marker + tail


def test_stdin_input(ssh: SSHTransport) -> None:
    data = os.urandom(3 * 1024 * 1024)
    r = ssh.run(["sha256sum"], input=data)
    assert r.stdout.split()[0].decode() == sha256_hex(data)
    assert ssh.run(["cat"]).stdout == b""  # no input: EOF at once, no hang


def test_timeout_raises_and_connection_stays_usable(ssh: SSHTransport) -> None:
    finished = "/var/tmp/" + unique("specadmin-finished")
    with pytest.raises(CommandTimeout) as info:
        ssh.run(["sh", "-c", 'echo partial; sleep 30; touch "$0"', finished], timeout=1.0)
    # Raised before the command could finish (it never does: timeout(1) ended it).
    assert ssh.run(["test", "-e", finished]).exit_code == 1
    assert info.value.stdout == b"partial\n"
    assert ssh.run(["echo", "ok"]).stdout == b"ok\n"


# --------------------------------------------------------------------------------------
# files


def test_read_write_atomic_content_and_mode(ssh: SSHTransport) -> None:
    d = "/var/tmp/" + unique("specadmin-files")
    ssh.run_checked(["mkdir", "-p", d])
    path = d + "/a file with spaces"
    assert ssh.read_file(path) is None
    ssh.write_file_atomic(path, b"one\n", mode=0o600)
    assert ssh.read_file(path) == b"one\n"
    assert ssh.run(["stat", "-c", "%a", path]).stdout == b"600\n"
    payload = os.urandom(2 * 1024 * 1024)
    ssh.write_file_atomic(path, payload, mode=0o644)
    assert ssh.read_file(path) == payload
    assert ssh.run(["stat", "-c", "%a", path]).stdout == b"644\n"
    assert ssh.run(["ls", "-A", d]).stdout == b"a file with spaces\n"  # no temp file left


def test_write_failure_leaves_old_file_and_no_temp(ssh: SSHTransport) -> None:
    d = "/var/tmp/" + unique("specadmin-fail")
    ssh.run_checked(["mkdir", "-p", d + "/target-is-a-dir"])
    ssh.run_checked(["sh", "-c", 'echo keep > "$1/target-is-a-dir/inner"', "sh", d])
    with pytest.raises(TransportError) as info:
        ssh.write_file_atomic(d + "/target-is-a-dir", b"new")  # rename over a dir fails
    assert not isinstance(info.value, ConnectionLost)
    assert ssh.read_file(d + "/target-is-a-dir/inner") == b"keep\n"
    assert ssh.run(["ls", "-A", d]).stdout == b"target-is-a-dir\n"
    with pytest.raises(TransportError):
        ssh.write_file_atomic(d + "/missing-dir/file", b"x")
    with pytest.raises(ValueError):
        ssh.write_file_atomic("relative/path", b"x")


def test_connection_killed_mid_upload_leaves_target_unchanged(
    testhost: TestHost, make_transport: Callable[..., SSHTransport]
) -> None:
    d = "/var/tmp/" + unique("specadmin-kill")
    target = d + "/unit.service"
    testhost.write_file(target, "[Service]\nExecStart=/bin/true\n")
    t = make_transport(command_timeout=30)
    t.connect()
    ours = sshd_serving(testhost, [t._transport().sock.getsockname()[1]])
    assert ours, "could not identify our sshd session process"

    data = b"x" * (400 * 1024 * 1024)
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            t.write_file_atomic(target, data)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=upload)
    thread.start()

    def temp_growing() -> bool:
        out = testhost.nsenter(["sh", "-c", 'du -b "$1"/.unit.service.specadmin-*', "sh", d])
        return any(int(line.split()[0]) > 8 * 1024 * 1024 for line in out.stdout.splitlines())

    assert wait_for(temp_growing, timeout=30, step=0.02), "upload never started"
    testhost.nsenter(["kill", "-KILL", *map(str, ours)], check=True)
    thread.join(60)
    assert not thread.is_alive()
    assert errors and isinstance(errors[0], TransportError), errors
    assert isinstance(errors[0], ConnectionLost), errors[0]
    assert testhost.read_file(target) == "[Service]\nExecStart=/bin/true\n"
    # The dead connection could not remove its temp file; the next writer cleans up.
    leftovers = make_transport().remove_stale_temp_files(target)
    assert all(posixpath.basename(p).startswith(".unit.service.specadmin-") for p in leftovers)
    assert testhost.nsenter(["ls", "-A", d]).stdout == "unit.service\n"


# --------------------------------------------------------------------------------------
# host keys and authentication


def test_probe_host_key_matches_the_pinned_key(testhost: TestHost, tmp_path: Path) -> None:
    info = probe_host_key(testhost.host, testhost.port, timeout=5)
    pinned = parse_pinned_key(testhost.host_key)
    assert (info.key_type, info.base64) == (pinned.get_name(), pinned.get_base64())
    assert info.fingerprint_sha256 == ssh_keygen_fingerprint(
        f"{info.key_type} {info.base64}", tmp_path
    )
    assert info.known_hosts_line(testhost.host, testhost.port) == testhost.host_key
    # The bare "type base64" form pins the same key.
    assert parse_pinned_key(f"{info.key_type} {info.base64} comment") == pinned


def test_wrong_pinned_key_is_refused_naming_both_fingerprints(
    testhost: TestHost, make_transport: Callable[..., SSHTransport], tmp_path: Path
) -> None:
    other = (keygen(tmp_path, "other_host_key").with_suffix(".pub")).read_text().strip()
    expected_fp = ssh_keygen_fingerprint(other, tmp_path)
    presented_fp = probe_host_key(testhost.host, testhost.port).fingerprint_sha256
    t = make_transport(pinned_host_key=other)
    with pytest.raises(HostKeyMismatch) as info:
        t.run(["true"])
    msg = str(info.value)
    assert expected_fp in msg and presented_fp in msg
    assert info.value.expected_fingerprint == expected_fp
    assert info.value.presented_fingerprint == presented_fp
    # Nothing was learned: the client's store still holds only the pinned key.
    assert t._client is None


def test_pinned_key_of_another_type_is_refused(
    testhost: TestHost, make_transport: Callable[..., SSHTransport], tmp_path: Path
) -> None:
    rsa = keygen(tmp_path, "rsa_host_key", "rsa").with_suffix(".pub").read_text().strip()
    with pytest.raises(HostKeyMismatch) as info:
        make_transport(pinned_host_key=rsa).connect()
    assert info.value.expected_fingerprint == ssh_keygen_fingerprint(rsa, tmp_path)


def test_wrong_client_key_is_authentication_failed(
    make_transport: Callable[..., SSHTransport], tmp_path: Path
) -> None:
    key = keygen(tmp_path, "stranger")
    with pytest.raises(AuthenticationFailed) as info:
        make_transport(key_filename=str(key)).connect()
    assert "BEGIN" not in str(info.value)  # never key material in messages
    with pytest.raises(AuthenticationFailed, match="cannot load private key"):
        make_transport(key_filename=str(tmp_path / "missing")).connect()


def test_closed_port_is_unreachable_by_refusal_not_by_timeout(testhost: TestHost) -> None:
    with refusing_port() as port:
        t = SSHTransport(
            "127.0.0.1",
            port,
            "root",
            pinned_host_key=testhost.host_key,
            key_filename=testhost.key_path,
            connect_timeout=3,
        )
        with pytest.raises(HostUnreachable) as info:
            t.connect()
        # Refused at once by the closed port (paramiko's NoValidConnectionsError lists why
        # per address), not given up after connect_timeout.
        causes = getattr(info.value.__cause__, "errors", {}).values()
        assert causes and all(isinstance(e, ConnectionRefusedError) for e in causes), causes
        with pytest.raises(HostUnreachable):
            probe_host_key("127.0.0.1", port, timeout=2)


def test_non_ssh_listener_times_out_as_unreachable(testhost: TestHost) -> None:
    with socket.socket() as srv:  # accepts, never sends a banner
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        t = SSHTransport(
            "127.0.0.1",
            srv.getsockname()[1],
            pinned_host_key=testhost.host_key,
            key_filename=testhost.key_path,
            connect_timeout=1,
        )
        # Past TCP, the handshake fails: connect_timeout bounds the wait for the banner.
        with pytest.raises(HostUnreachable, match="SSH handshake failed"):
            t.connect()


def test_fingerprint_format() -> None:
    pub = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIObN2mfSpL9umBnAttpsIUy5Nwn0I6L0+3k+H0wC832/"
    fp = fingerprint_sha256(parse_pinned_key(pub))
    assert fp.startswith("SHA256:") and not fp.endswith("=") and len(fp) == 7 + 43


# --------------------------------------------------------------------------------------
# systemd helpers


def test_systemctl_helpers_and_journal_cursor(ssh: SSHTransport) -> None:
    unit = unique("specadmin-t") + ".service"
    path = f"{UNIT_DIR}/{unit}"
    ssh.write_file_atomic(
        path,
        b"[Service]\nExecStartPre=/bin/echo marker-start\nExecStart=/bin/sleep 300\n",
    )
    try:
        ssh.daemon_reload()
        props = ssh.unit_properties(unit, ["LoadState", "ActiveState", "FragmentPath"])
        assert props == {"LoadState": "loaded", "ActiveState": "inactive", "FragmentPath": path}
        ssh.start(unit)
        props = ssh.unit_properties(
            unit, ["ActiveState", "SubState", "MainPID", "NeedDaemonReload"]
        )
        assert props["ActiveState"] == "active" and props["SubState"] == "running", props
        assert int(props["MainPID"]) > 0 and props["NeedDaemonReload"] == "no"

        def markers(since: str | None = None) -> list:
            return [e for e in ssh.journal(unit, since=since) if e.message == "marker-start"]

        first = wait_for(markers, timeout=10)
        assert first and len(first) == 1
        cursor = ssh.journal(unit, lines=1)[-1].cursor
        assert cursor.startswith("s=")
        ssh.restart(unit)
        newer = wait_for(lambda: markers(cursor), timeout=10)
        assert newer and len(newer) == 1, "only entries after the cursor"
        assert newer[0].realtime_usec > first[0].realtime_usec
        assert newer[0].pid != first[0].pid
        ssh.stop(unit)
        assert ssh.unit_properties(unit, ["ActiveState"]) == {"ActiveState": "inactive"}
        with pytest.raises(RemoteCommandFailed):
            ssh.start("specadmin-does-not-exist.service")
        with pytest.raises(ValueError):
            ssh.start("../etc/passwd")
    finally:
        ssh.systemctl("stop", unit, check=False)
        ssh.run(["rm", "-f", path])
        ssh.daemon_reload()


# --------------------------------------------------------------------------------------
# pushing a unit


def test_push_unit_backup_reload_verify(ssh: SSHTransport, testhost: TestHost) -> None:
    unit = unique("specadmin-push") + ".service"
    path = f"{UNIT_DIR}/{unit}"
    v1 = "[Service]\nExecStart=/bin/sleep 100\n"
    v2 = "[Service]\nExecStart=/bin/sleep 200\n"
    try:
        r1 = push_unit(ssh, unit, v1)
        assert (r1.changed, r1.previous, r1.backup_path) == (True, None, None)
        assert r1.properties["LoadState"] == "loaded" and r1.properties["FragmentPath"] == path
        assert r1.sha256 == sha256_hex(v1.encode())

        ssh.run_checked(["systemctl", "start", unit])  # a running unit is left as it is
        r2 = push_unit(ssh, unit, v2, expected_previous_sha256=r1.sha256)
        assert r2.changed and r2.previous == v1.encode()
        assert r2.backup_path == path + BACKUP_SUFFIX
        assert testhost.read_file(path) == v2
        assert testhost.read_file(path + BACKUP_SUFFIX) == v1
        assert r2.properties["NeedDaemonReload"] == "no"
        assert ssh.unit_properties(unit, ["ActiveState"]) == {"ActiveState": "active"}
        assert "sleep 200" in ssh.unit_properties(unit, ["ExecStart"])["ExecStart"]

        r3 = push_unit(ssh, unit, v2)  # idempotent: same text, backup keeps v1
        assert not r3.changed and testhost.read_file(path + BACKUP_SUFFIX) == v1

        with pytest.raises(UnitPushError, match="changed on the host"):
            push_unit(ssh, unit, v1, expected_previous_sha256=r1.sha256)
        assert testhost.read_file(path) == v2

        restored = restore_backup(ssh, unit)
        assert testhost.read_file(path) == v1 and restored.previous == v2.encode()
        assert testhost.nsenter(["ls", "-A", UNIT_DIR]).stdout.count(unit) == 2  # + backup
    finally:
        ssh.systemctl("stop", unit, check=False)
        ssh.run(["rm", "-f", path, path + BACKUP_SUFFIX])
        ssh.daemon_reload()


def test_brand_new_unit_does_not_keep_an_older_backup(
    ssh: SSHTransport, testhost: TestHost
) -> None:
    """A unit of that name was removed by hand, its backup stayed: a rollback of the new
    unit must not find something unrelated to put back."""
    unit = unique("specadmin-fresh") + ".service"
    path = f"{UNIT_DIR}/{unit}"
    testhost.write_file(path + BACKUP_SUFFIX, "[Service]\nExecStart=/bin/echo ancient\n")
    try:
        result = push_unit(ssh, unit, "[Service]\nExecStart=/bin/sleep 100\n")
        assert result.changed and result.previous is None and result.backup_path is None
        assert result.removed_stale_backup == path + BACKUP_SUFFIX
        assert testhost.nsenter(["ls", "-A", UNIT_DIR]).stdout.count(unit) == 1
        with pytest.raises(UnitPushError, match="no backup"):
            restore_backup(ssh, unit)
    finally:
        ssh.run(["rm", "-f", path, path + BACKUP_SUFFIX])
        ssh.daemon_reload()


def test_push_unit_refuses_bad_input_without_writing(ssh: SSHTransport) -> None:
    before = ssh.run(["ls", "-A", UNIT_DIR]).stdout
    for name in ("../evil.service", "a;b.service", "x y.service", "$(id).service", "noext"):
        with pytest.raises(UnitPushError, match="not a valid systemd unit name"):
            push_unit(ssh, name, "[Service]\nExecStart=/bin/true\n")
    with pytest.raises(UnitPushError, match="limit"):
        push_unit(ssh, "big.service", "#" * (300 * 1024))
    with pytest.raises(UnitPushError, match="NUL"):
        push_unit(ssh, "nul.service", "[Service]\0")
    assert ssh.run(["ls", "-A", UNIT_DIR]).stdout == before


def test_push_unit_that_systemd_refuses_is_reported(ssh: SSHTransport) -> None:
    unit = unique("specadmin-bad") + ".service"
    try:
        with pytest.raises(UnitPushError, match="LoadState=bad-setting") as info:
            push_unit(ssh, unit, "[Service]\nType=simple\n")  # no ExecStart=: refused
        assert info.value.result is not None and info.value.result.changed
    finally:
        ssh.run(["rm", "-f", f"{UNIT_DIR}/{unit}"])
        ssh.daemon_reload()


# --------------------------------------------------------------------------------------
# GPUs (nvidia-smi double inside the host)


def test_gpu_status_via_nvidia_smi(ssh: SSHTransport, testhost: TestHost) -> None:
    gpus = ssh.gpu_status()
    assert [g.index for g in gpus] == list(range(8))
    assert {g.name for g in gpus} == {"NVIDIA H200"}
    assert all(g.memory_total_mib == 143771 for g in gpus)
    assert len({g.uuid for g in gpus}) == 8
    holder = unique("specadmin-gpu-holder")
    script = (
        "import os, time\n"
        "from doubles import gpu_state\n"
        "c = gpu_state.load_config()\n"
        "gpu_state.register(c, 3, os.getpid(), 4096)\n"
        "gpu_state.register(c, 5, os.getpid(), 1000)\n"
        "time.sleep(300)\n"
    )
    ssh.run_checked(
        [
            "systemd-run",
            f"--unit={holder}",
            "--setenv=PYTHONPATH=/usr/local/lib/gpu-double",
            "--",
            testhost.python,
            "-c",
            script,
        ]
    )
    try:
        busy = wait_for(lambda: [g for g in ssh.gpu_status() if g.memory_used_mib], timeout=10)
        assert [(g.index, g.memory_used_mib) for g in busy] == [(3, 4096), (5, 1000)]
        pid = int(ssh.unit_properties(holder + ".service", ["MainPID"])["MainPID"])
        assert [(p.pid, p.used_mib) for p in busy[0].processes] == [(pid, 4096)]
        assert busy[0].processes[0].gpu_uuid == busy[0].uuid
        assert testhost.python in busy[0].processes[0].name
    finally:
        ssh.stop(holder + ".service")
    assert all(g.memory_used_mib == 0 and not g.processes for g in ssh.gpu_status())


def test_gpu_status_without_nvidia_smi_is_a_clear_error(
    ssh: SSHTransport, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ssh, "nvidia_smi", "nvidia-smi-absent-specadmin")
    with pytest.raises(GpuUnavailable, match="exit 127"):
        ssh.gpu_status()


def test_threads_share_one_connection_with_own_sftp_clients(ssh: SSHTransport) -> None:
    d = "/var/tmp/" + unique("specadmin-threads")
    ssh.run_checked(["mkdir", "-p", d])
    errors: list[BaseException] = []
    sftps: set[int] = set()

    def work(i: int) -> None:
        try:
            for j in range(5):
                data = f"{i}-{j}\n".encode() * 1000
                ssh.write_file_atomic(f"{d}/f{i}", data)
                assert ssh.read_file(f"{d}/f{i}") == data
                assert ssh.run(["echo", str(i)]).stdout == f"{i}\n".encode()
            sftps.add(id(ssh._tls.sftp))
        except BaseException as exc:
            errors.append(exc)

    first = ssh._transport()
    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    assert not errors, errors
    assert len(sftps) == 6, "one SFTP client per thread"
    assert ssh._transport() is first
    assert ssh.run(["ls", "-A", d]).stdout.split() == [f"f{i}".encode() for i in range(6)]
    # Finished threads' SFTP clients are closed when the next one is made (sshd counts
    # their channels against MaxSessions).
    late = threading.Thread(target=lambda: ssh.read_file(f"{d}/f0"))
    late.start()
    late.join(30)
    assert all(th.is_alive() for th in ssh._sftps if th is not late)


# --------------------------------------------------------------------------------------
# channel opens that time out

# sshd_config(5): MaxSessions, 10 per connection by default (the test host's setting).
MAX_SESSIONS = 10


def test_session_opens_that_time_out_do_not_pile_up_against_max_sessions(
    testhost: TestHost, make_transport: Callable[..., SSHTransport]
) -> None:
    # A stalled sshd: each open times out after connect_timeout and `_open` tries again.
    # sshd answers them all late; a late-confirmed session nobody closes counts against
    # MaxSessions, so MaxSessions of them refuse every later session.
    t = make_transport()
    t.connect()
    t.connect_timeout = 0.2  # how long each channel open waits for its answer
    results: list[object] = []
    with sshd_stalled(testhost, t):
        runner = threading.Thread(target=lambda: results.append(_run_or_error(t, ["true"])))
        runner.start()
        # MaxSessions timed-out opens, plus the one awaited and the one before it (the
        # retry loop still references its exception, so paramiko still has its Channel).
        assert wait_for(lambda: pending_channel_opens(t) >= MAX_SESSIONS + 2, timeout=60), (
            "the stalled opens were not retried"
        )
        # Whether paramiko still has a timed-out Channel object when the answer comes
        # depends on when Python collects it (`Transport._channels` holds it weakly);
        # collected, the answer is dropped and nothing can close the channel.
        gc.collect()
    t.connect_timeout = 10
    runner.join(90)
    assert not runner.is_alive()
    assert [getattr(r, "exit_code", r) for r in results] == [0]
    assert [t.run(["echo", str(i)]).stdout for i in range(3)] == [b"0\n", b"1\n", b"2\n"]
    assert wait_for(lambda: not t._transport()._channels.values()), (
        "a late-confirmed channel is still open"
    )


def _run_or_error(t: SSHTransport, argv: list[str]) -> object:
    try:
        return t.run(argv, timeout=30)
    except TransportError as exc:
        return exc
