"""OP rules: how a GPU service behaves when systemd starts, stops and restarts it
(docs/architecture.md fact 6: TimeoutStartSec= bounds each ExecStartPre= separately, vLLM sends no
READY=1, KillMode=process lets workers survive)."""

from __future__ import annotations

import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import pytest

from linting.engine import lint_paths
from linting.findings import Severity
from linting.options import LintOptions
from tests.linting.helpers import lint, spanned, where

VLLM = "ExecStart=/opt/vllm/bin/vllm serve /models/m\n"
GOOD = "[Service]\nType=exec\n" + VLLM + "Restart=on-failure\nTimeoutStopSec=120s\n"


@pytest.mark.parametrize("code", ["OP401", "OP402", "OP403", "OP404", "OP405", "OP406", "OP407"])
def test_good_vllm_unit_has_no_op_findings(code):
    assert lint(GOOD, code) == []


# --- OP401 ------------------------------------------------------------------------------


def test_op401_notify_type_with_vllm():
    (f,) = lint("[Service]\nType=notify\n" + VLLM, "OP401")
    assert where(f) == (2, 6, 12)
    assert f.severity == Severity.ERROR
    assert "never sends READY=1" in f.message
    assert "TimeoutStartSec (90 s)" in f.message


def test_op401_names_the_configured_timeout():
    (f,) = lint("[Service]\nType=notify\nTimeoutStartSec=45min\n" + VLLM, "OP401")
    assert "TimeoutStartSec (45 min)" in f.message


def test_op401_notify_for_other_programs_is_fine():
    assert lint("[Service]\nType=notify\nExecStart=/usr/sbin/sshd -D\n", "OP401") == []


# --- OP402 ------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["process", "none"])
def test_op402_kill_mode_leaves_workers(mode):
    (f,) = lint(f"[Service]\nKillMode={mode}\n" + VLLM, "OP402")
    assert where(f) == (2, 10, 10 + len(mode))
    assert "EngineCore" in f.message


@pytest.mark.parametrize("mode", ["control-group", "mixed"])
def test_op402_group_kill_modes_are_fine(mode):
    assert lint(f"[Service]\nKillMode={mode}\n" + VLLM, "OP402") == []


# --- OP403 ------------------------------------------------------------------------------

LOOP = (
    "ExecStartPre=/bin/bash -c 'for i in $$(seq 1 60); do nvidia-smi | grep -q . || exit 0;"
    " sleep 5; done; exit 1'\n"
)


def test_op403_wait_loop_longer_than_default_start_timeout():
    (f,) = lint("[Service]\n" + VLLM + LOOP, "OP403")
    assert where(f) == (3, 14, len(LOOP))
    assert f.severity == Severity.ERROR
    assert "at least 5 min (60 × 5 s)" in f.message
    assert "TimeoutStartSec=90 s (the default)" in f.message


@pytest.mark.parametrize(
    ("line", "worst"),
    [
        ("ExecStartPost=/bin/sleep 600\n", "10 min"),  # "until the model has loaded"
        ("ExecStartPre=/bin/bash -c 'pkill -f vllm; sleep 120'\n", "2 min"),
    ],
)
def test_op403_a_fixed_sleep_longer_than_the_start_timeout_fails_the_start(line, worst):
    (f,) = lint("[Service]\n" + VLLM + line, "OP403")
    assert f.severity == Severity.ERROR
    assert f"at least {worst} (a fixed sleep)" in f.message
    assert "TimeoutStartSec=90 s (the default)" in f.message
    assert lint("[Service]\nTimeoutStartSec=30min\n" + VLLM + line, "OP403") == []


def test_op403_a_short_fixed_sleep_is_not_a_timeout_problem():
    assert lint("[Service]\n" + VLLM + "ExecStartPre=/bin/sleep 30\n", "OP403") == []


def test_op403_enough_start_timeout_is_fine():
    assert lint("[Service]\nTimeoutStartSec=10min\n" + VLLM + LOOP, "OP403") == []


def test_op403_timeout_of_a_command_inside_the_loop_does_not_cap_the_loop():
    loop = LOOP.replace("nvidia-smi", "timeout 5 nvidia-smi")
    (f,) = lint("[Service]\n" + VLLM + loop, "OP403")
    assert "at least 5 min (60 × 5 s)" in f.message


def test_op403_timeout_around_the_whole_wait_caps_it():
    pre = "ExecStartPre=/bin/bash -c 'timeout 60 bash -c \"while true; do sleep 5; done\"'\n"
    assert lint("[Service]\n" + VLLM + pre, "OP403") == []


def test_op403_empty_timeout_is_ignored_not_a_reset_to_the_default():
    # systemd: 'Failed to parse TimeoutStartSec= parameter, ignoring: ' and 10min stays
    text = "[Service]\nTimeoutStartSec=10min\nTimeoutStartSec=\n" + VLLM + LOOP
    assert lint(text, "OP403") == []
    assert len(lint(text, "SD104")) == 1


def test_op403_unbounded_loop_is_a_warning():
    text = "[Service]\n" + VLLM + "ExecStartPre=/bin/bash -c 'while true; do sleep 1; done'\n"
    (f,) = lint(text, "OP403")
    assert f.severity == Severity.WARNING
    assert "no bound" in f.message


def test_op403_unbounded_loop_with_infinite_timeout_is_fine():
    text = (
        "[Service]\nTimeoutStartSec=infinity\n"
        + VLLM
        + "ExecStartPre=/bin/bash -c 'while true; do sleep 1; done'\n"
    )
    assert lint(text, "OP403") == []


# --- OP404 ------------------------------------------------------------------------------


def test_op404_no_restart_policy_points_at_service_header():
    (f,) = lint("[Unit]\nDescription=x\n[Service]\n" + VLLM, "OP404")
    assert where(f) == (3, 1, 10)
    assert "Restart=on-failure" in f.message


def test_op404_points_at_the_service_header_in_the_dropin(tmp_path: Path):
    unit = tmp_path / "vllm.service"
    unit.write_text("[Unit]\nDescription=x\n")
    (tmp_path / "vllm.service.d").mkdir()
    dropin = tmp_path / "vllm.service.d" / "run.conf"
    dropin.write_text("# the command\n[Service]\n" + VLLM)
    report = lint_paths([str(unit)], LintOptions(shellcheck=False))
    (f,) = [f for f in report.files[0].findings if f.code == "OP404"]
    assert (f.path, where(f)) == (str(dropin), (2, 1, 10))


def test_op404_restart_no_points_at_the_value():
    (f,) = lint("[Service]\n" + VLLM + "Restart=no\n", "OP404")
    assert where(f) == (3, 9, 11)


def test_op404_not_for_non_vllm_services():
    assert lint("[Service]\nExecStart=/usr/sbin/sshd -D\n", "OP404") == []


# --- OP405 ------------------------------------------------------------------------------


def test_op405_short_stop_timeout():
    (f,) = lint("[Service]\n" + VLLM + "TimeoutStopSec=5s\n", "OP405")
    assert where(f) == (3, 16, 18)
    assert "SIGKILL 5 s after" in f.message


def test_op405_timeout_sec_counts_too():
    (f,) = lint("[Service]\n" + VLLM + "TimeoutSec=10\n", "OP405")
    assert where(f) == (3, 12, 14)


def test_op405_points_into_the_dropin(tmp_path: Path):
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\n" + VLLM)
    (tmp_path / "vllm.service.d").mkdir()
    dropin = tmp_path / "vllm.service.d" / "stop.conf"
    dropin.write_text("[Service]\n\nTimeoutStopSec=5s\n")
    report = lint_paths([str(unit)], LintOptions(shellcheck=False))
    (f,) = [f for f in report.files[0].findings if f.code == "OP405"]
    assert f.path == str(dropin)
    assert where(f) == (3, 16, 18)


def test_op405_default_stop_timeout_is_fine():
    assert lint("[Service]\n" + VLLM, "OP405") == []


# --- OP406 ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ["ExecStartPre=/bin/sleep 30\n", "ExecStartPre=/bin/bash -c 'sleep 30'\n"]
)
def test_op406_fixed_sleep_before_start(line):
    (f,) = lint("[Service]\n" + VLLM + line, "OP406")
    assert where(f) == (3, 14, len(line))
    assert "waits a fixed time" in f.message


@pytest.mark.parametrize(
    "script", ["pkill -f vllm || true; sleep 30", "fuser -k /dev/nvidia*; sleep 5s"]
)
def test_op406_fixed_sleep_after_other_commands_in_a_script(script):
    (f,) = lint(f"[Service]\n{VLLM}ExecStartPre=/bin/bash -c '{script}'\n", "OP406")
    assert "waits a fixed time" in f.message


def test_op406_fixed_sleep_after_the_stop_to_let_the_gpus_free_up():
    (f,) = lint("[Service]\n" + VLLM + "ExecStopPost=/bin/sleep 15\n", "OP406")
    assert "waits a fixed time" in f.message


def test_op406_sleep_in_a_script_with_a_bounded_loop_is_fine():
    loop = 'pkill -f vllm; until [ -z "$$(pgrep -f vllm)" ]; do sleep 1; done'
    assert lint(f"[Service]\n{VLLM}ExecStartPre=/bin/bash -c '{loop}'\n", "OP406") == []


def test_op406_sleep_inside_a_check_loop_is_fine():
    assert lint("[Service]\n" + VLLM + LOOP, "OP406") == []


# --- OP407 ------------------------------------------------------------------------------

CHECK = "ExecStartPre=/bin/bash -c 'nvidia-smi -i 0,1,2,3 --query-gpu=memory.used --format=csv'\n"


def test_op407_gpu_check_covers_a_subset():
    text = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n" + VLLM + CHECK
    (f,) = lint(text, "OP407")
    assert where(f) == (4, 42, 49)
    assert "GPU(s) 0,1,2,3 only" in f.message
    assert "8 GPUs" in f.message


def test_op407_gpu_check_run_directly_without_a_shell():
    check = "ExecStartPre=/usr/bin/nvidia-smi -i 0,1 --query-gpu=memory.used\n"
    text = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1,2,3\n" + VLLM + check
    (f,) = lint(text, "OP407")
    assert where(f) == (4, 37, 40)
    assert "GPU(s) 0,1 only" in f.message
    assert lint(text.replace("-i 0,1 ", "--id=0,1,2,3 "), "OP407") == []


def test_op407_tensor_parallel_size_counts_gpus():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve /m --tensor-parallel-size 8\n" + CHECK
    assert len(lint(text, "OP407")) == 1


def test_op407_check_of_all_used_gpus_is_fine():
    text = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1,2,3\n" + VLLM + CHECK
    assert lint(text, "OP407") == []


def test_op407_a_check_of_other_gpus_than_the_service_uses_is_reported() -> None:
    check = "ExecStartPre=/usr/bin/nvidia-smi -i 0,1 --query-gpu=memory.used\n"
    text = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=2,3\n" + VLLM + check
    (f,) = lint(text, "OP407")
    assert "GPU(s) 0,1 only" in f.message and "uses 2 GPUs (2,3)" in f.message
    assert "leftovers on GPUs 2,3" in f.message
    assert lint(text.replace("-i 0,1 ", "-i 3,2 "), "OP407") == []


@pytest.mark.parametrize("devices", ["02,03", "2a,3", "2,3,x,4"])
def test_op407_reads_the_service_s_gpus_the_way_cuda_does(devices: str) -> None:
    """`02` is GPU 2, `2a` GPU 2, the list ends at `x`: a check of 2,3 covers them all."""
    check = "ExecStartPre=/bin/bash -c 'nvidia-smi -i 2,3 --query-gpu=memory.used --format=csv'\n"
    text = f"[Service]\nEnvironment=CUDA_VISIBLE_DEVICES={devices}\n" + VLLM + check
    assert lint(text, "OP407") == []
    (f,) = lint(text.replace("-i 2,3", "-i 2"), "OP407")
    assert "leftovers on GPU 3" in f.message


def test_op407_a_check_by_uuid_counts_the_gpus_it_names() -> None:
    uuid = "GPU-2eb6f7e6-d050-65b0-231b-13f31e8c9ac4"
    check = f"ExecStartPre=/bin/bash -c 'nvidia-smi -i {uuid} --query-gpu=memory.used'\n"
    one = f"[Service]\nEnvironment=CUDA_VISIBLE_DEVICES={uuid}\n" + VLLM + check
    assert lint(one, "OP407") == []
    (f,) = lint(one.replace(f"DEVICES={uuid}", "DEVICES=0,1"), "OP407")
    assert "uses 2 GPUs (0,1)" in f.message and "1 of them" in f.message


# The seed deployment's own cleanup: every GPU queried, then `head -4` kept the first four.
HEAD = (
    "ExecStartPre=/bin/bash -c 'nvidia-smi --query-gpu=memory.used --format=csv,noheader,"
    "nounits | HEAD | sort -n | tail -1'\n"
)
EIGHT = "[Service]\nEnvironment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7\n" + VLLM


@pytest.mark.parametrize("head", ["head -4", "head -n 4", "head -n4", "head --lines=4"])
def test_op407_gpu_check_that_keeps_the_first_lines_with_head_covers_a_subset(head):
    text = EIGHT + HEAD.replace("HEAD", head)
    (f,) = lint(text, "OP407")
    assert spanned(text, f) == head
    assert "first 4 GPU(s)" in f.message and "8 GPUs" in f.message


def test_op407_head_after_a_csv_header_counts_one_gpu_fewer():
    text = EIGHT + HEAD.replace("noheader,", "").replace("HEAD", "head -5")
    (f,) = lint(text, "OP407")
    assert "first 4 GPU(s)" in f.message


def test_op407_head_that_keeps_every_used_gpu_and_head_of_processes_are_fine():
    assert lint(EIGHT + HEAD.replace("HEAD", "head -8"), "OP407") == []
    apps = "nvidia-smi --query-compute-apps=pid --format=csv | head -3"
    assert lint(EIGHT + f"ExecStartPre=/bin/bash -c '{apps}'\n", "OP407") == []


# -- OP408..OP410 ----------------------------------------------------

ROOTLESS = "[Service]\nUser=vllm\nExecStart=/opt/vllm/bin/vllm serve /models/m --host 127.0.0.1\n"


def test_op408_private_devices_hides_the_gpus():
    (f,) = lint(ROOTLESS + "PrivateDevices=yes\n", "OP408")
    assert "/dev/nvidia" in f.message
    assert lint("[Service]\nPrivateDevices=yes\nExecStart=/bin/true\n", "OP408") == []


def test_op408_closed_device_policy_needs_the_nvidia_devices():
    (f,) = lint(ROOTLESS + "DevicePolicy=closed\nDeviceAllow=/dev/nvidiactl rw\n", "OP408")
    assert "/dev/nvidia-uvm" in f.message and "the GPUs" in f.message
    allowed = "DeviceAllow=char-nvidia-frontend rw\nDeviceAllow=char-nvidia-uvm rw\n"
    assert lint(ROOTLESS + "DevicePolicy=strict\n" + allowed, "OP408") == []
    paths = "DeviceAllow=/dev/nvidiactl\nDeviceAllow=/dev/nvidia-uvm\nDeviceAllow=/dev/nvidia0\n"
    assert lint(ROOTLESS + "DevicePolicy=closed\n" + paths, "OP408") == []


@pytest.mark.parametrize(
    "command",
    [
        "/opt/ray/bin/ray start --head",
        "/usr/bin/docker run -d --gpus all vllm/vllm-openai:v0.16.0 --model m",
        "/bin/sh -c 'vllm serve m & exit 0'",
    ],
)
def test_op409_commands_that_daemonize_under_type_simple(command):
    (f,) = lint(f"[Service]\nExecStart={command}\n", "OP409")
    assert "exits at once" in f.message
    assert lint(f"[Service]\nType=forking\nExecStart={command}\n", "OP409") == []


def test_op409_blocking_forms_are_fine():
    for command in ("/opt/ray/bin/ray start --head --block", "/usr/bin/docker run --rm img"):
        assert lint(f"[Service]\nExecStart={command}\n", "OP409") == [], command


def test_op410_root_on_every_interface():
    text = "[Service]\nExecStart=/opt/vllm/bin/vllm serve /models/m --port 8000\n"
    (f,) = lint(text, "OP410")
    assert f.severity == Severity.WARNING and "root" in f.message
    assert where(f)[0] == 2
    assert lint(text.replace("[Service]\n", "[Service]\nUser=vllm\n"), "OP410") == []
    assert lint(text.replace("8000", "8000 --host 127.0.0.1"), "OP410") == []
    (g,) = lint(text.replace("8000", "8000 --host 0.0.0.0"), "OP410")
    assert "--host binds every interface" in g.message
    assert lint(text.replace("[Service]\n", "[Service]\nDynamicUser=yes\n"), "OP410") == []


# -- OP411 ----------------------------------------------------------------------------------
# `pkill -f PATTERN` matches full command lines, and the shell that runs it has the pattern
# in its own: `bash -c 'pkill -f "vllm serve"; echo survived'` ends with 143 (SIGTERM),
# "survived" never printed (procps pkill skips only itself, not its parent shell).


@pytest.mark.parametrize(
    "script",
    [
        'pkill -f "vllm serve" || true; sleep 5',
        "pkill -9 -f vllm; exit 0",
        "pkill --full VLLM::EngineCore",
    ],
)
def test_op411_pkill_full_in_a_shell_script_kills_the_shell_itself(script):
    text = f"[Service]\n{VLLM}ExecStartPre=/bin/bash -c '{script}'\n"
    (f,) = lint(text, "OP411")
    assert f.severity == Severity.ERROR
    assert "kills the shell that runs it" in f.message
    assert spanned(text, f).startswith("pkill")


def test_op411_a_pattern_that_cannot_match_its_own_text_and_pkill_without_f_are_fine():
    for script in ('pkill -f "[v]llm serve"; exit 0', "pkill vllm; exit 0"):
        assert lint(f"[Service]\n{VLLM}ExecStartPre=/bin/bash -c '{script}'\n", "OP411") == []
    assert lint(f"[Service]\n{VLLM}ExecStartPre=/usr/bin/pkill -f vllm\n", "OP411") == []


def test_op411_in_a_stop_command_only_the_rest_of_the_script_is_lost():
    text = f"[Service]\n{VLLM}ExecStopPost=/bin/sh -c 'pkill -f vllm; rm -f /run/x'\n"
    (f,) = lint(text, "OP411")
    assert f.severity == Severity.WARNING


@pytest.mark.skipif(shutil.which("pkill") is None, reason="needs procps' pkill")
def test_op411_premise_bash_running_pkill_full_of_its_own_text_is_killed():
    marker = f"specadmin-op411-{uuid.uuid4().hex}"  # matches nothing else on the machine
    script = f'pkill -f "{marker}" || true; echo survived'
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout) == (-signal.SIGTERM, "")
    assert len(lint(f"[Service]\n{VLLM}ExecStartPre=/bin/bash -c '{script}'\n", "OP411")) == 1
