"""The checks as pure functions: readings in, verdicts out (watchdog.checks, metrics)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hostops.channel.base import GpuInfo, GpuProcess
from hostops.channel.push import sha256_hex
from hostops.gpu_clean import ServiceIdentity
from tests.doubles.watch_host import FakeServer, proc
from watchdog import checks
from watchdog.checks import Watched
from watchdog.metrics import MetricsUnreadable, Sample, parse

ROOT = Path(__file__).resolve().parents[2]
UNIT = "vllm-a"
APPROVED = "[Service]\nExecStart=/usr/bin/vllm serve m\n"


def state(**changes: object) -> checks.UnitState:
    props = {
        "LoadState": "loaded",
        "ActiveState": "active",
        "SubState": "running",
        "Result": "success",
        "NRestarts": "0",
        "MainPID": "1000",
    }
    props.update({k: str(v) for k, v in changes.items()})
    return checks.unit_state(UNIT, props)


def kinds(verdict: checks.Verdict) -> list[str]:
    return [f.kind for f in verdict.findings]


# -- the unit ---------------------------------------------------------------------------


def test_a_running_unit_that_does_not_restart_is_healthy() -> None:
    assert kinds(checks.check_unit(state(), [(0, 0), (30, 0)])) == []


def test_a_failed_unit_is_an_incident_naming_systemds_result() -> None:
    verdict = checks.check_unit(state(ActiveState="failed", Result="exit-code"), [(0, 0)])
    assert kinds(verdict) == ["unit_failed"]
    assert verdict.findings[0].summary == "vllm-a.service failed (result exit-code)"


def test_a_stopped_unit_and_a_missing_one_are_not_running() -> None:
    stopped = checks.check_unit(state(ActiveState="inactive", SubState="dead"), [])
    assert stopped.findings[0].summary == "vllm-a.service is not running (inactive)"
    gone = checks.check_unit(state(LoadState="not-found", ActiveState="inactive"), [])
    assert "not loaded" in gone.findings[0].summary


def test_systemd_auto_restarting_the_unit_is_a_restart_loop() -> None:
    verdict = checks.check_unit(state(ActiveState="activating", SubState="auto-restart"), [])
    assert kinds(verdict) == ["restart_loop"]


def test_three_restarts_within_the_window_are_a_loop_and_old_ones_are_not() -> None:
    recent = [(0.0, 1), (100.0, 2), (200.0, 4)]
    assert kinds(checks.check_unit(state(NRestarts=4), recent, loop_window_s=300)) == [
        "restart_loop"
    ]
    spread = [(0.0, 1), (400.0, 2), (800.0, 4)]
    assert kinds(checks.check_unit(state(NRestarts=4), spread, loop_window_s=300)) == []


# -- drift ------------------------------------------------------------------------------


def test_the_approved_text_on_the_host_is_no_drift() -> None:
    assert kinds(checks.check_drift(UNIT, APPROVED, APPROVED.encode())) == []


def test_a_hand_edit_is_drift_with_its_diff_and_both_hashes() -> None:
    edited = APPROVED.replace("serve m", "serve m --max-model-len 1024")
    [finding] = checks.check_drift(UNIT, APPROVED, edited.encode()).findings
    assert finding.kind == "drift"
    assert "+ExecStart=/usr/bin/vllm serve m --max-model-len 1024" in finding.evidence["diff"]
    assert "-ExecStart=/usr/bin/vllm serve m\n" in finding.evidence["diff"]
    assert finding.evidence["host_sha256"] != finding.evidence["approved_sha256"]


def test_a_removed_file_is_drift_and_a_huge_diff_is_cut() -> None:
    [gone] = checks.check_drift(UNIT, APPROVED, None).findings
    assert "removed on the host" in gone.summary
    huge = APPROVED + "# x\n" * 10_000
    [cut] = checks.check_drift(UNIT, APPROVED, huge.encode()).findings
    assert len(cut.evidence["diff"]) < checks.DIFF_CHARS + 100
    assert "more characters not kept" in cut.evidence["diff"]


DROP_DIR = f"/etc/systemd/system/{UNIT}.service.d"


def test_a_drop_in_specadmin_did_not_deploy_is_drift_with_its_path_and_bounded_text() -> None:
    text = "[Service]\nEnvironment=VLLM_ATTENTION_BACKEND=FLASHINFER\n" + "# x\n" * 5000
    drop = checks.DropIn(f"{DROP_DIR}/override.conf", text.encode())
    [finding] = checks.check_drop_ins(UNIT, {}, [drop]).findings
    assert finding.kind == "drift"
    assert finding.subject == f"drop-in {DROP_DIR}/override.conf"
    assert f"{DROP_DIR}/override.conf" in finding.summary
    assert finding.evidence["path"] == f"{DROP_DIR}/override.conf"
    assert finding.evidence["text"].startswith("[Service]\nEnvironment=VLLM_ATTENTION_BACKEND")
    assert len(finding.evidence["text"]) < checks.DROP_IN_CHARS + 100
    assert finding.evidence["size"] == len(text)


def test_a_drop_in_that_was_approved_is_no_drift_until_it_is_edited() -> None:
    path = f"{DROP_DIR}/10-limits.conf"
    approved = b"[Service]\nLimitNOFILE=65536\n"
    sha = sha256_hex(approved)
    assert checks.check_drop_ins(UNIT, {path: sha}, [checks.DropIn(path, approved)]).findings == ()
    edited = checks.DropIn(path, b"[Service]\nLimitNOFILE=1024\n")
    [finding] = checks.check_drop_ins(UNIT, {path: sha}, [edited]).findings
    assert "edited" in finding.summary
    assert finding.evidence["approved_sha256"] == sha


def test_no_drop_ins_is_no_drift_and_one_not_read_is_named_by_its_path() -> None:
    assert checks.check_drop_ins(UNIT, {}, []).findings == ()
    odd = checks.DropIn("/home/eve/vllm-a.conf", None, "not read: not in a unit directory")
    [finding] = checks.check_drop_ins(UNIT, {}, [odd]).findings
    assert finding.evidence["note"] == "not read: not in a unit directory"
    assert finding.evidence["text"] == ""


def test_systemds_drop_in_paths_are_this_units_own_in_unit_directories() -> None:
    reported = (
        f"{DROP_DIR}/a.conf /run/systemd/system/{UNIT}.service.d/b.conf "
        "/usr/lib/systemd/system/service.d/10-timeout-abort.conf "
        "/etc/systemd/system/vllm-.service.d/prefix.conf"
    )
    assert checks.own_drop_in_paths(UNIT, reported) == [
        f"{DROP_DIR}/a.conf",
        f"/run/systemd/system/{UNIT}.service.d/b.conf",
    ]
    assert checks.readable_drop_in(UNIT, f"{DROP_DIR}/a.conf")
    assert not checks.readable_drop_in(UNIT, f"/tmp/{UNIT}.service.d/a.conf")
    assert not checks.readable_drop_in(UNIT, f"{DROP_DIR}/../../../../etc/shadow.conf")
    assert not checks.readable_drop_in(UNIT, f"{DROP_DIR}/a.txt")


# -- GPUs -------------------------------------------------------------------------------


def gpus(*holders: tuple[int, int, int]) -> list[GpuInfo]:
    """8 GPUs; (pid, gpu, MiB) processes on them."""
    out = []
    for i in range(8):
        procs = tuple(GpuProcess(p, "x", m, f"GPU-{i}") for p, g, m in holders if g == i)
        out.append(
            GpuInfo(i, "H200", f"GPU-{i}", sum(m for _, g, m in holders if g == i), 143771, procs)
        )
    return out


def service(running: bool = True, visible: str | None = None) -> Watched:
    return Watched(
        ServiceIdentity(
            unit="vllm-a.service",
            cgroup="/system.slice/vllm-a.service",
            user="vllm",
            visible_devices=visible,
        ),
        running,
    )


def test_the_services_own_engine_in_its_cgroup_is_no_incident() -> None:
    infos = {7: proc(7, cgroup="/system.slice/vllm-a.service")}
    assert kinds(checks.check_gpus(gpus((7, 0, 90_000)), infos, [service()])) == []


def test_an_escaped_engine_core_holding_memory_while_stopped_is_a_named_leftover() -> None:
    infos = {4242: proc(4242, cgroup="/init.scope")}
    verdict = checks.check_gpus(gpus((4242, 0, 90_000), (4242, 1, 90_000)), infos, [service(False)])
    [finding] = verdict.findings
    assert finding.kind == "gpu_leftover"
    assert finding.subject == "vllm-a:pid 4242"
    assert finding.summary.startswith(
        "PID 4242 (VLLM::EngineCore, user vllm) holds 176 GiB on GPUs 0-1: a leftover of "
        "vllm-a.service"
    )
    assert finding.evidence["gpus"] == [0, 1] and finding.evidence["mib"] == 180_000


def test_an_escaped_engine_core_beside_the_running_service_is_a_leftover_too() -> None:
    infos = {
        7: proc(7, cgroup="/system.slice/vllm-a.service"),
        4242: proc(4242, cgroup="/init.scope"),
    }
    verdict = checks.check_gpus(gpus((7, 0, 1000), (4242, 0, 9000)), infos, [service()])
    assert [(f.kind, f.subject) for f in verdict.findings] == [("gpu_leftover", "vllm-a:pid 4242")]


def test_another_users_process_on_the_services_gpus_is_foreign_and_elsewhere_nothing() -> None:
    infos = {55: proc(55, user="alice", title="python train.py", cgroup="/user.slice/x")}
    on_ours = checks.check_gpus(gpus((55, 3, 38_000)), infos, [service(visible="2,3")])
    [finding] = on_ours.findings
    assert finding.kind == "gpu_foreign"
    assert finding.summary.startswith("PID 55 (python, user alice) holds 37 GiB on GPU 3")
    elsewhere = checks.check_gpus(gpus((55, 5, 38_000)), infos, [service(visible="2,3")])
    assert kinds(elsewhere) == []


def test_memory_with_no_process_listed_on_a_stopped_services_gpu_is_a_leftover() -> None:
    readings = gpus()
    readings[2] = GpuInfo(2, "H200", "GPU-2", 50_000, 143771)
    verdict = checks.check_gpus(readings, {}, [service(False, visible="2")])
    [finding] = verdict.findings
    assert finding.subject == "vllm-a:gpu 2" and "no process listed" in finding.summary


# -- a hung engine ----------------------------------------------------------------------


def sample(at: float, running: float, generated: float, **spec: float) -> Sample:
    return Sample(at, running, 0, generated, spec.get("drafted"), spec.get("accepted"))


def test_requests_running_and_no_token_for_the_window_is_a_hung_engine() -> None:
    samples = [sample(0, 2, 500), sample(30, 2, 900), sample(60, 2, 900), sample(90, 2, 900)]
    [finding] = checks.check_hung(UNIT, samples, window_s=60).findings
    assert finding.kind == "hung_engine" and finding.evidence["stuck_s"] == 60


def test_a_short_stall_idle_server_or_moving_counter_is_not_hung() -> None:
    assert kinds(checks.check_hung(UNIT, [sample(0, 2, 900), sample(30, 2, 900)])) == []
    idle = [sample(t, 0, 900) for t in (0, 30, 60, 90)]
    assert kinds(checks.check_hung(UNIT, idle)) == []
    moving = [sample(t, 3, 100 + t) for t in (0, 30, 60, 90)]
    assert kinds(checks.check_hung(UNIT, moving)) == []


def test_a_stall_short_of_the_window_asks_to_be_checked_again_when_the_window_ends() -> None:
    # The counter stopped before the check at 30. The next checks ran a little early (a
    # due time's lag differs from check to check): 59.5 s is not yet the window, and
    # waiting a whole period more would find it 30 s late.
    samples = [sample(0, 2, 500), sample(30.4, 2, 900), sample(60, 2, 900), sample(89.9, 2, 900)]
    verdict = checks.check_hung(UNIT, samples, window_s=60)
    assert kinds(verdict) == [] and verdict.recheck_at == 90.4
    decided = checks.check_hung(UNIT, [*samples, sample(90.4, 2, 900)], window_s=60)
    assert kinds(decided) == ["hung_engine"] and decided.recheck_at is None


def test_a_moving_counter_asks_for_a_check_a_window_after_its_last_token_an_idle_one_not() -> None:
    moving = [sample(t, 3, 100 + t) for t in (0, 30, 60)]
    assert checks.check_hung(UNIT, moving, window_s=10).recheck_at == 70
    idle = [sample(t, 0, 900) for t in (0, 30, 60)]
    assert checks.check_hung(UNIT, idle, window_s=10).recheck_at is None
    assert checks.check_hung(UNIT, [], window_s=10).recheck_at is None


# -- speculative acceptance -------------------------------------------------------------


def test_acceptance_far_below_the_benchmarked_rate_is_a_collapse() -> None:
    samples = [
        sample(0, 1, 0, drafted=0, accepted=0),
        sample(300, 1, 0, drafted=1000, accepted=100),
    ]
    [finding] = checks.check_acceptance(UNIT, samples, 60.0, window_s=300).findings
    assert finding.kind == "acceptance_collapse"
    assert finding.evidence["rate_percent"] == 10.0 and finding.evidence["expected_percent"] == 60


def test_acceptance_near_the_benchmark_is_fine_and_too_little_traffic_is_not_judged() -> None:
    good = [sample(0, 1, 0, drafted=0, accepted=0), sample(300, 1, 0, drafted=1000, accepted=550)]
    assert checks.check_acceptance(UNIT, good, 60.0).findings == ()
    quiet = [sample(0, 1, 0, drafted=0, accepted=0), sample(300, 1, 0, drafted=100, accepted=1)]
    assert checks.check_acceptance(UNIT, quiet, 60.0).judged is False
    assert checks.check_acceptance(UNIT, good, None).findings == ()


# -- metrics and failed readings --------------------------------------------------------


def test_vllms_metrics_are_summed_over_engines_and_spec_counters_are_optional() -> None:
    text = FakeServer(running=2, generated=100, draft_tokens=50, accepted=20).text()
    text += 'vllm:generation_tokens_total{engine="1",model_name="m"} 11.0\n'
    read = parse(text, at=5.0)
    assert (read.running, read.generated, read.draft_tokens, read.accepted) == (2, 111, 50, 20)
    assert parse(FakeServer().text(), 0).draft_tokens is None
    with pytest.raises(MetricsUnreadable):
        parse("<html>not metrics</html>", 0)


def test_every_failed_reading_is_an_unreachable_finding_with_its_reason() -> None:
    verdict = checks.check_reach({"gpus": "nvidia-smi failed (exit 9)", "ssh": "timed out"})
    assert [(f.kind, f.subject) for f in verdict.findings] == [
        ("unreachable", "gpus"),
        ("unreachable", "ssh"),
    ]
    assert verdict.findings[0].summary == "gpus: nvidia-smi failed (exit 9)"


def test_the_checks_import_without_django_so_the_gpu_benchmark_can_use_them() -> None:
    """benchmarks/gpu_clean_real.py runs on a lent GPU machine with no database: importing
    a Django model on the way (as a drift helper once did) stops it before it measures."""
    code = (
        "import sys, watchdog.checks; "
        "print(sorted(m for m in sys.modules if m.startswith('django.db.models')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
