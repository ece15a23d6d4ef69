"""LocalTransport: for real inside a test host (its systemd and D-Bus are real), plus the
parts that need no systemd (subprocess, files, NVML through a double) on this machine."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hostops.channel import CommandTimeout, GpuUnavailable, Transport, TransportError
from hostops.channel.local import LocalTransport, format_property
from tests.doubles import gpu_state
from tests.doubles.nvml_double import NVML_ERROR_LIBRARY_NOT_FOUND, NvmlDouble
from tests.testhost.host import TestHost

REPO = Path(__file__).resolve().parents[2]
VENV_PYTHON = str(REPO / ".venv/bin/python")

# Runs inside the test host with the project's .venv (the overlay's lower layer is `/`, so
# the checkout and the venv are at the same paths there). Prints one JSON object.
IN_HOST_SCRIPT = r"""
import json, os, sys, time, traceback
sys.path.insert(0, REPO)
from hostops.channel import RemoteCommandFailed, push_unit
from hostops.channel.base import Transport
from hostops.channel.local import LocalTransport
from tests.doubles.nvml_double import NvmlDouble

out = {}
def step(name):
    def wrap(fn):
        try:
            out[name] = fn()
        except Exception as exc:
            out[name] = {"error": type(exc).__name__, "message": str(exc),
                         "traceback": traceback.format_exc()}
        return fn
    return wrap

t = LocalTransport(nvml=NvmlDouble())
unit = "specadmin-local-%d.service" % os.getpid()
path = "/etc/systemd/system/" + unit
SCALARS = ["Id", "LoadState", "ActiveState", "SubState", "FragmentPath", "NeedDaemonReload",
           "MainPID", "ExecMainStatus", "ExecMainCode", "Result", "Description", "Names",
           "UnitFileState", "CanStart", "Type", "ActiveEnterTimestamp", "NRestarts"]

@step("before_write")
def _():
    return t.unit_properties(unit, ["LoadState"])

@step("write")
def _():
    t.write_file_atomic(path, b"[Service]\nExecStartPre=/bin/echo local-marker\n"
                        b"ExecStart=/bin/sleep 300\n", 0o640)
    st = os.stat(path)
    return {"mode": oct(st.st_mode & 0o777), "content": t.read_file(path).decode(),
            "missing": t.read_file(path + ".nope"),
            "temps": [n for n in os.listdir("/etc/systemd/system") if "specadmin-" in n
                      and n.startswith(".")]}

@step("reload")
def _():
    started = time.monotonic()
    t.daemon_reload()
    return {"seconds": time.monotonic() - started,
            "props": t.unit_properties(unit, ["LoadState", "FragmentPath",
                                              "NeedDaemonReload"])}

@step("start")
def _():
    t.start(unit)
    return t.unit_properties(unit, ["ActiveState", "SubState", "MainPID"])

def compare():
    mine = t.unit_properties(unit, SCALARS)
    shown = t.run(["systemctl", "show", "--property=" + ",".join(SCALARS), unit]).stdout
    theirs = dict(l.split("=", 1) for l in shown.decode().splitlines() if "=" in l)
    return {"dbus": mine, "systemctl": theirs}

step("compare_running")(compare)

@step("journal")
def _():
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        entries = [e for e in t.journal(unit) if e.message == "local-marker"]
        if entries:
            break
        time.sleep(0.1)
    cursor = t.journal(unit, lines=1)[-1].cursor
    t.restart(unit)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        newer = [e for e in t.journal(unit, since=cursor) if e.message == "local-marker"]
        if newer:
            break
        time.sleep(0.1)
    return {"first": len(entries), "after_cursor": len(newer)}

@step("stop")
def _():
    t.stop(unit)
    return t.unit_properties(unit, ["ActiveState", "SubState", "MainPID"])

step("compare_stopped")(compare)

@step("failing_start")
def _():
    t.write_file_atomic(path, b"[Service]\nType=oneshot\nExecStart=/bin/false\n")
    t.daemon_reload()
    try:
        t.start(unit)
    except RemoteCommandFailed as exc:
        return {"raised": str(exc),
                "props": t.unit_properties(unit, ["ActiveState", "Result"])}
    return {"raised": None}

@step("missing_unit")
def _():
    try:
        t.start("specadmin-no-such-unit.service")
    except RemoteCommandFailed as exc:
        return {"raised": str(exc)}
    return {"raised": None}

@step("push")
def _():
    r1 = push_unit(t, unit, "[Service]\nExecStart=/bin/sleep 100\n")
    r2 = push_unit(t, unit, "[Service]\nExecStart=/bin/sleep 200\n")
    return {"r1": [r1.changed, r1.backup_path, r1.properties],
            "r2": [r2.changed, r2.backup_path, r2.properties],
            "backup": open(path + ".specadmin-prev").read()}

@step("gpu")
def _():
    via_nvml = t.gpu_status()
    via_smi = Transport.gpu_status(t)  # the nvidia-smi double, read the way SSH reads it
    return {"nvml": [repr(g) for g in via_nvml], "smi": [repr(g) for g in via_smi]}

@step("timeout")
def _():
    started = time.monotonic()
    try:
        t.run(["sh", "-c", "sleep 30 & sleep 30"], timeout=0.5)
    except Exception as exc:
        left = t.run(["pgrep", "-f", "^sleep 30$"]).stdout.decode().split()
        return {"raised": type(exc).__name__, "seconds": time.monotonic() - started,
                "left": left}

t.systemctl("stop", unit, check=False)
for p in (path, path + ".specadmin-prev"):
    if os.path.exists(p):
        os.unlink(p)
t.daemon_reload()
t.close()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def in_host(testhost: TestHost) -> dict[str, Any]:
    """Run IN_HOST_SCRIPT inside the host (over ssh, as a worker there would run)."""
    script = f"REPO = {str(REPO)!r}\n" + IN_HOST_SCRIPT
    env = ["env", "PYTHONDONTWRITEBYTECODE=1"]
    res = testhost.ssh(
        [*env, VENV_PYTHON, "-c", script],
        timeout=180,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout.strip().splitlines()[-1])


def ok(result: Any) -> Any:
    if isinstance(result, dict) and "error" in result and "traceback" in result:
        pytest.fail(result["traceback"])
    return result


@pytest.mark.testhost
def test_write_file_atomic_in_host(in_host: dict[str, Any]) -> None:
    w = ok(in_host["write"])
    assert w["mode"] == "0o640" and "local-marker" in w["content"]
    assert w["missing"] is None and w["temps"] == []


@pytest.mark.testhost
def test_unit_state_and_daemon_reload_over_dbus(in_host: dict[str, Any]) -> None:
    assert ok(in_host["before_write"]) == {"LoadState": "not-found"}
    reload = ok(in_host["reload"])
    assert reload["props"]["LoadState"] == "loaded"
    assert reload["props"]["FragmentPath"].startswith("/etc/systemd/system/specadmin-local-")
    assert reload["props"]["NeedDaemonReload"] == "no"
    start = ok(in_host["start"])
    assert start["ActiveState"] == "active" and start["SubState"] == "running"
    assert int(start["MainPID"]) > 0
    stop = ok(in_host["stop"])
    assert stop == {"ActiveState": "inactive", "SubState": "dead", "MainPID": "0"}


@pytest.mark.testhost
@pytest.mark.parametrize("when", ["compare_running", "compare_stopped"])
def test_dbus_properties_read_like_systemctl_show(in_host: dict[str, Any], when: str) -> None:
    """The same step code runs on both transports: values must read the same."""
    both = ok(in_host[when])
    assert both["dbus"] == both["systemctl"]


@pytest.mark.testhost
def test_journal_cursor_in_host(in_host: dict[str, Any]) -> None:
    j = ok(in_host["journal"])
    assert j == {"first": 1, "after_cursor": 1}


@pytest.mark.testhost
def test_failing_and_missing_units_raise(in_host: dict[str, Any]) -> None:
    failing = ok(in_host["failing_start"])
    assert failing["raised"] and "result 'failed'" in failing["raised"]
    assert failing["props"] == {"ActiveState": "failed", "Result": "exit-code"}
    missing = ok(in_host["missing_unit"])
    assert missing["raised"] and "not found" in missing["raised"]


@pytest.mark.testhost
def test_push_unit_with_local_transport(in_host: dict[str, Any]) -> None:
    push = ok(in_host["push"])
    changed, backup, props = push["r2"]
    assert changed and backup.endswith(".specadmin-prev")
    assert props["LoadState"] == "loaded" and props["NeedDaemonReload"] == "no"
    assert "sleep 100" in push["backup"]


@pytest.mark.testhost
def test_nvml_double_agrees_with_nvidia_smi_double(in_host: dict[str, Any]) -> None:
    gpu = ok(in_host["gpu"])
    assert len(gpu["nvml"]) == 8 and gpu["nvml"] == gpu["smi"]


@pytest.mark.testhost
def test_timeout_kills_the_process_group_in_host(in_host: dict[str, Any]) -> None:
    t = ok(in_host["timeout"])
    assert t["raised"] == "CommandTimeout" and t["left"] == []


# --------------------------------------------------------------------------------------
# no systemd needed: this machine


def test_run_read_write_locally(tmp_path: Path) -> None:
    with LocalTransport() as t:
        r = t.run(["sh", "-c", 'printf "%s" "$1"; echo err >&2; exit 3', "sh", "a b$c"])
        assert (r.exit_code, r.stdout, r.stderr) == (3, b"a b$c", b"err\n")
        assert t.run(["cat"], input=b"x" * 3_000_000).stdout == b"x" * 3_000_000
        assert t.run(["no-such-command-specadmin"]).exit_code == 127
        target = tmp_path / "f"
        assert t.read_file(str(target)) is None
        t.write_file_atomic(str(target), b"data", 0o600)
        assert target.read_bytes() == b"data" and (target.stat().st_mode & 0o777) == 0o600
        with pytest.raises(TransportError):
            t.write_file_atomic(str(tmp_path / "missing/f"), b"x")
        (tmp_path / "dir").mkdir()
        with pytest.raises(TransportError):
            t.write_file_atomic(str(tmp_path / "dir"), b"x")
        assert sorted(p.name for p in tmp_path.iterdir()) == ["dir", "f"]
        seconds = str(secrets.randbelow(90000) + 10000)  # a command line nothing else runs
        with pytest.raises(CommandTimeout):
            t.run(["sleep", seconds], timeout=0.3)
        # Killed at the timeout, not waited for: it is gone once run() has raised.
        assert subprocess.run(["pgrep", "-fx", f"sleep {seconds}"]).returncode == 1


def test_gpu_status_with_nvml_double(tmp_path: Path) -> None:
    cfg = gpu_state.GpuConfig(gpu_count=2, state_dir=str(tmp_path), uuid_seed="local")
    gpu_state.register(cfg, 1, os.getpid(), 2048)
    nvml = NvmlDouble(cfg)
    with LocalTransport(nvml=nvml) as t:
        gpus = t.gpu_status()
        assert [(g.index, g.memory_used_mib, g.memory_total_mib) for g in gpus] == [
            (0, 0, 143771),
            (1, 2048, 143771),
        ]
        [proc] = gpus[1].processes
        assert (proc.pid, proc.used_mib, proc.gpu_uuid) == (os.getpid(), 2048, cfg.uuid(1))
        assert proc.name == gpu_state.process_name(os.getpid())
        t.gpu_status()
    assert nvml.calls.count("nvmlInit") == 1 and nvml.calls[-1] == "nvmlShutdown"
    # v2: `used` without driver-reserved memory, like nvidia-smi's memory.used.
    assert f"nvmlDeviceGetMemoryInfo(version={nvml.nvmlMemory_v2})" in nvml.calls


def test_gpu_status_without_driver_is_a_clear_error() -> None:
    t = LocalTransport(nvml=NvmlDouble(init_error=NVML_ERROR_LIBRARY_NOT_FOUND))
    with pytest.raises(GpuUnavailable, match=r"NVML cannot initialise.*no NVIDIA driver"):
        t.gpu_status()


def test_missing_pystemd_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pystemd", None)
    with pytest.raises(TransportError, match="needs the package 'pystemd'"):
        LocalTransport().unit_properties("ssh.service", ["LoadState"])


def test_format_property_like_systemctl() -> None:
    assert format_property("NeedDaemonReload", False) == "no"
    assert format_property("MainPID", 12) == "12"
    assert format_property("Names", [b"a.service", b"b.service"]) == "a.service b.service"
    assert format_property("ActiveEnterTimestamp", 0) == ""


@pytest.mark.gpu
def test_real_nvml_on_a_gpu_host() -> None:
    """Real pynvml: run on a GPU machine (an H200 here); skipped where NVML cannot initialise."""
    pynvml = pytest.importorskip("pynvml")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        pytest.skip(f"NVML cannot initialise here: {exc}")
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        pynvml.nvmlShutdown()
    with LocalTransport() as t:
        gpus = t.gpu_status()
    assert len(gpus) == count > 0
    for g in gpus:
        assert g.uuid.startswith(("GPU-", "MIG-")) and g.name
        assert 0 <= g.memory_used_mib <= g.memory_total_mib
        for p in g.processes:
            assert p.pid > 0 and p.gpu_uuid == g.uuid
    if shutil.which("nvidia-smi"):  # both transports' readings must agree
        with LocalTransport() as t:
            smi = Transport.gpu_status(t)
        assert [(g.uuid, g.name, g.memory_total_mib) for g in smi] == [
            (g.uuid, g.name, g.memory_total_mib) for g in gpus
        ]
        for a, b in zip(gpus, smi, strict=True):
            assert abs(a.memory_used_mib - b.memory_used_mib) <= 64, (a, b)
