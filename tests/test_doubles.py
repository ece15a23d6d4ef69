"""The GPU/vLLM test doubles, without a host: formats, schedule math, argument checks."""

from __future__ import annotations

import http.client
import itertools
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.doubles import gpu_state, nvidia_smi_double, vllm_double
from tests.doubles.vllm_double import Chunk, plan_chunks

REPO = Path(__file__).resolve().parents[1]
REAL_CATALOGS = REPO / "linting/vllm/catalogs"
FIXTURE_CATALOGS = REPO / "tests/doubles/fixtures"


def catalog(version: str) -> dict[str, Any]:
    """The generated catalog; the tiny fixture only where the generator has not run yet."""
    return vllm_double.load_catalog(version, [str(REAL_CATALOGS), str(FIXTURE_CATALOGS)])


def needs_catalog(version: str) -> Any:
    return pytest.mark.skipif(
        not (REAL_CATALOGS / f"vllm-{version}.json").exists(),
        reason=f"generated catalog vllm-{version}.json not there yet",
    )


@pytest.fixture
def gpus(tmp_path: Path) -> gpu_state.GpuConfig:
    return gpu_state.GpuConfig(gpu_count=4, state_dir=str(tmp_path / "state"), uuid_seed="t")


def run_smi(config: gpu_state.GpuConfig, capsys: Any, *argv: str, rc: int = 0) -> str:
    """stdout of the double; asserts its exit status (real nvidia-smi: 2 usage, 6 no device)."""
    assert nvidia_smi_double.main(list(argv), config=config) == rc
    return capsys.readouterr().out


# --------------------------------------------------------------------------------------
# nvidia-smi


def test_idle_gpus_print_like_real_nvidia_smi(gpus: gpu_state.GpuConfig, capsys: Any) -> None:
    out = run_smi(
        gpus, capsys, "--query-gpu=index,name,uuid,memory.used,memory.total", "--format=csv"
    )
    lines = out.splitlines()
    assert lines[0] == "index, name, uuid, memory.used [MiB], memory.total [MiB]"
    assert lines[1] == f"0, NVIDIA H200, {gpus.uuid(0)}, 0 MiB, 143771 MiB"
    assert len(lines) == 5


def test_registered_memory_counts_only_while_the_pid_lives(
    gpus: gpu_state.GpuConfig, capsys: Any
) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    gpu_state.register(gpus, 1, os.getpid(), 1234)
    gpu_state.register(gpus, 2, dead.pid, 999)
    out = run_smi(gpus, capsys, "--query-gpu=index,memory.used", "--format=csv,noheader")
    assert out == "0, 0 MiB\n1, 1234 MiB\n2, 0 MiB\n3, 0 MiB\n"
    out = run_smi(gpus, capsys, "--query-gpu=index,memory.used", "--format=csv,noheader,nounits")
    assert out.splitlines()[1] == "1, 1234"
    out = run_smi(gpus, capsys, "--query-gpu=memory.used", "--format=csv,nounits")
    assert out.splitlines()[0] == "memory.used [MiB]"  # the header keeps its unit


@pytest.mark.skipif(os.geteuid() != 0, reason="switching to another user needs root")
def test_a_process_of_another_user_holds_gpu_memory_like_on_a_real_gpu(capsys: Any) -> None:
    # A unit with User=vllm (the demo profiles) runs vLLM as that user; on a test host the
    # state directory is made like /dev/shm at boot (tests/testhost/install.py).
    shared = Path(tempfile.mkdtemp(prefix="gpu-double-", dir="/tmp"))
    try:
        shared.chmod(0o1777)
        config = gpu_state.GpuConfig(gpu_count=2, state_dir=str(shared / "state"))
        shared_state = shared / "state"
        shared_state.mkdir(mode=0o1777)
        shared_state.chmod(0o1777)
        gpu_state.register(config, 0, os.getpid(), 100)  # root's process came first
        other = subprocess.Popen(["sleep", "30"])
        script = (
            "import sys; from tests.doubles import gpu_state; "
            "gpu_state.register(gpu_state.GpuConfig(gpu_count=2, state_dir=sys.argv[1]), "
            "0, int(sys.argv[2]), 2000)"
        )
        as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        done = subprocess.run(
            [*as_nobody, sys.executable, "-c", script, str(shared_state), str(other.pid)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        out = run_smi(config, capsys, "--query-gpu=memory.used", "--format=csv,noheader,nounits")
        assert out.splitlines() == ["2100", "0"]
        other.kill()
        other.wait()
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_compute_apps_header_is_canonical_and_rows_per_gpu(
    gpus: gpu_state.GpuConfig, capsys: Any
) -> None:
    query = "--query-compute-apps=pid,process_name,used_memory"
    out = run_smi(gpus, capsys, query, "--format=csv")
    assert out == "pid, process_name, used_gpu_memory [MiB]\n"
    out = run_smi(gpus, capsys, query, "--format=csv,noheader")
    assert out == ""
    gpu_state.register(gpus, 0, os.getpid(), 10)
    gpu_state.register(gpus, 3, os.getpid(), 20)
    out = run_smi(gpus, capsys, query + ",gpu_uuid", "--format=csv,noheader")
    name = gpu_state.process_name(os.getpid())
    assert out.splitlines() == [
        f"{os.getpid()}, {name}, 10 MiB, {gpus.uuid(0)}",
        f"{os.getpid()}, {name}, 20 MiB, {gpus.uuid(3)}",
    ]
    out = run_smi(gpus, capsys, "-i", "3", query, "--format=csv,noheader,nounits")
    assert out == f"{os.getpid()}, {name}, 20\n"


def test_list_and_errors_match_real_texts(gpus: gpu_state.GpuConfig, capsys: Any) -> None:
    out = run_smi(gpus, capsys, "-L")
    assert out.splitlines()[2] == f"GPU 2: NVIDIA H200 (UUID: {gpus.uuid(2)})"
    assert gpus.uuid(2).startswith("GPU-") and len(gpus.uuid(2)) == 40
    out = run_smi(gpus, capsys, "--query-gpu=index,bogus", "--format=csv", rc=2)
    assert out == 'Field "bogus" is not a valid field to query.\n\n'
    out = run_smi(gpus, capsys, "-i", "9", "--query-gpu=index", "--format=csv", rc=6)
    assert out == "No devices were found\n"


# `nvidia-smi -i IDS --query-gpu=index --format=csv,noheader` on one H200 (nvidia-smi
# 580.159.04): IDS → the GPUs listed, or the exit status. On 4 GPUs here; a GPU of the list
# the host lacks is skipped, as `0,1` and `1,0` showed GPU 0 on the one-GPU host.
SMI_IDS = {
    "0": [0], "00": [0], " 0": [0], "0,0": [0], "0,9": [0], "9,0": [0], "1": [1], "01": [1],
    "2,1": [1, 2], "0 ": 6, "0a": 6, "-1": 6, "9": 6, "": 255,
}  # fmt: skip


@pytest.mark.parametrize(("ids", "listed"), sorted(SMI_IDS.items()))
def test_gpus_selected_with_i_as_real_nvidia_smi_selects_them(
    gpus: gpu_state.GpuConfig, capsys: Any, ids: str, listed: list[int] | int
) -> None:
    query = ["-i", ids, "--query-gpu=index", "--format=csv,noheader"]
    if isinstance(listed, int):
        out = run_smi(gpus, capsys, *query, rc=listed)
        failed = "Failed to parse device string on command line"  # no newline
        assert out == (failed if listed == 255 else "No devices were found\n")
        return
    assert run_smi(gpus, capsys, *query).split() == [str(i) for i in listed]


def test_gpus_selected_with_i_by_whole_uuid_or_bus_id_but_not_a_uuid_prefix(
    gpus: gpu_state.GpuConfig, capsys: Any
) -> None:
    query = ["--query-gpu=index", "--format=csv,noheader"]
    by_uuid = f"{gpus.uuid(2)},0"
    assert run_smi(gpus, capsys, "-i", by_uuid, *query).split() == ["0", "2"]
    bus = run_smi(gpus, capsys, "-i", "3", "--query-gpu=pci.bus_id", "--format=csv,noheader")
    assert run_smi(gpus, capsys, f"--id={bus.strip()}", *query) == "3\n"
    run_smi(gpus, capsys, "-i", gpus.uuid(2)[:12], *query, rc=6)
    gpu_state.register(gpus, 1, os.getpid(), 10)
    apps = ["--query-compute-apps=pid", "--format=csv,noheader"]
    assert run_smi(gpus, capsys, "-i", "0,2", *apps) == ""  # rc 0, nothing on them
    assert run_smi(gpus, capsys, "-i", "0,1", *apps) == f"{os.getpid()}\n"


# --------------------------------------------------------------------------------------
# schedule and metrics


def test_plan_without_spec_decoding_is_one_token_per_gap() -> None:
    chunks = plan_chunks(4, ttft_s=0.1, itl_s=0.02)
    assert [c.tokens for c in chunks] == [1, 1, 1, 1]
    assert [round(c.at_s, 3) for c in chunks] == [0.1, 0.12, 0.14, 0.16]
    assert sum(c.drafts + c.draft_tokens + c.accepted for c in chunks) == 0


def test_plan_with_spec_decoding_emits_accepted_plus_bonus_per_draft() -> None:
    chunks = plan_chunks(9, ttft_s=0, itl_s=1, num_speculative_tokens=4, accepted_per_step=3)
    assert chunks == [
        Chunk(0, 1, 0, 0, 0),
        Chunk(1, 4, 1, 4, 3),
        Chunk(2, 4, 1, 4, 3),
    ]


def test_last_step_is_cut_at_max_tokens_and_counts_only_sent_tokens() -> None:
    chunks = plan_chunks(7, ttft_s=0, itl_s=1, num_speculative_tokens=4, accepted_per_step=3)
    assert [c.tokens for c in chunks] == [1, 4, 2]
    assert [c.accepted for c in chunks] == [0, 3, 1]
    assert sum(c.tokens for c in chunks) == 7


@pytest.mark.parametrize("max_tokens", [1, 2, 5, 16, 33])
@pytest.mark.parametrize(("n", "a"), [(0, None), (1, None), (3, 1), (5, 5), (4, 0)])
def test_counters_are_consistent_with_emitted_tokens(
    max_tokens: int, n: int, a: int | None
) -> None:
    chunks = plan_chunks(
        max_tokens, ttft_s=0, itl_s=0.01, num_speculative_tokens=n, accepted_per_step=a
    )
    assert sum(c.tokens for c in chunks) == max_tokens
    drafts = sum(c.drafts for c in chunks)
    assert sum(c.draft_tokens for c in chunks) == n * drafts
    # every token after the first is either accepted or the bonus token of a draft step
    assert sum(c.accepted for c in chunks) + len(chunks) - 1 == max_tokens - 1


def test_metrics_text_has_spec_counters_only_with_a_spec_config() -> None:
    m = vllm_double.SpecMetrics()
    for c in plan_chunks(9, ttft_s=0, itl_s=0, num_speculative_tokens=4, accepted_per_step=3):
        m.add(c)
    text = vllm_double.render_metrics(m, "m", spec_enabled=True)
    assert 'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 2.0' in text
    assert 'vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="m"} 8.0' in text
    assert 'vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="m"} 6.0' in text
    assert "# TYPE vllm:spec_decode_num_drafts_total counter" in text
    assert "spec_decode" not in vllm_double.render_metrics(m, "m", spec_enabled=False)


def test_human_readable_int_uses_decimal_lowercase_and_binary_uppercase() -> None:
    assert vllm_double.human_readable_int("32k") == 32000
    assert vllm_double.human_readable_int("32K") == 32768
    assert vllm_double.human_readable_int("1.5m") == 1_500_000
    assert vllm_double.human_readable_int("4096") == 4096


# --------------------------------------------------------------------------------------
# argument checks


def parse(version: str, *args: str) -> Any:
    return vllm_double.parse_serve_args(catalog(version), version, list(args))


@needs_catalog("0.16.0")
def test_unknown_flag_is_reported_by_the_top_level_parser(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        parse("0.16.0", "m", "--foo", "1")
    assert exc.value.code == 2
    assert "vllm: error: unrecognized arguments: --foo 1" in capsys.readouterr().err


@needs_catalog("0.16.0")
def test_removed_legacy_spec_flags_are_unrecognized(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        parse("0.16.0", "m", "--num-speculative-tokens", "3")
    assert "unrecognized arguments: --num-speculative-tokens 3" in capsys.readouterr().err


@needs_catalog("0.16.0")
@needs_catalog("0.8.5")
def test_invalid_spec_json_is_an_argparse_error_worded_per_version(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        parse("0.16.0", "m", "--speculative-config", "{bad")
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "vllm serve: error: argument --speculative-config: Value {bad cannot be " in err
    assert "converted to <function loads at 0x" in err
    with pytest.raises(SystemExit):
        parse("0.8.5", "m", "--speculative-config", "{bad")
    assert "argument --speculative-config: invalid loads value: '{bad'" in capsys.readouterr().err


@needs_catalog("0.16.0")
def test_flexible_parser_accepts_underscores_model_option_and_short_tp() -> None:
    ns = parse(
        "0.16.0",
        "--model",
        "org/m",
        "--max_model_len",
        "32k",
        "-tp",
        "2",
        "--speculative-config.method",
        "ngram",
        "--speculative-config.num_speculative_tokens",
        "3",
    )
    assert ns.model_tag == "org/m"
    assert ns.max_model_len == 32000
    assert ns.tensor_parallel_size == 2
    assert ns.speculative_config == {"method": "ngram", "num_speculative_tokens": 3}


@needs_catalog("0.16.0")
def test_plain_int_error_uses_argparse_wording(capsys: Any) -> None:
    with pytest.raises(SystemExit):
        parse("0.16.0", "m", "--port", "x")
    assert "argument --port: invalid int value: 'x'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ("0.8.5", "TypeError: SpeculativeConfig.__init__() got an unexpected keyword argument"),
        ("0.11.0", None),  # silently ignored
        ("0.16.0", "Unexpected keyword argument [type=unexpected_keyword_argument"),
    ],
)
def test_unknown_spec_key_follows_the_version(version: str, expected: str | None) -> None:
    if not (REAL_CATALOGS / f"vllm-{version}.json").exists():
        pytest.skip("catalog not generated yet")
    spec = {"method": "ngram", "num_speculative_tokens": 3, "lookup_max": 4}
    if expected is None:
        assert vllm_double.validate_speculative_config(spec, catalog(version), version) == {
            "method": "ngram",
            "num_speculative_tokens": 3,
        }
    else:
        with pytest.raises(vllm_double.EngineConfigError) as exc:
            vllm_double.validate_speculative_config(spec, catalog(version), version)
        assert expected in str(exc.value)
        assert "lookup_max" in str(exc.value)


@needs_catalog("0.16.0")
def test_unknown_method_lists_the_accepted_literals() -> None:
    with pytest.raises(vllm_double.EngineConfigError) as exc:
        vllm_double.validate_speculative_config(
            {"method": "lookahead", "num_speculative_tokens": 2}, catalog("0.16.0"), "0.16.0"
        )
    assert "method\n  Input should be 'ngram', 'medusa'," in str(exc.value)
    assert "[type=literal_error, input_value='lookahead', input_type=str]" in str(exc.value)


def test_gpus_follow_cuda_visible_devices_and_tp(gpus: gpu_state.GpuConfig) -> None:
    assert vllm_double.pick_gpus("3,1", 2, gpus) == [3, 1]
    assert vllm_double.pick_gpus(None, 1, gpus) == [0]
    assert vllm_double.pick_gpus(gpus.uuid(2), 1, gpus) == [2]
    with pytest.raises(vllm_double.EngineConfigError, match="World size"):
        vllm_double.pick_gpus("0", 2, gpus)
    with pytest.raises(vllm_double.EngineConfigError, match="No CUDA GPUs"):
        vllm_double.pick_gpus("", 1, gpus)
    # As CUDA reads the list (tests/doubles/cuda_visible.py): 01 is GPU 1, `0a` GPU 0.
    assert vllm_double.pick_gpus("01,0a", 2, gpus) == [1, 0]
    with pytest.raises(vllm_double.EngineConfigError, match="No CUDA GPUs"):
        vllm_double.pick_gpus("2,02", 1, gpus)  # GPU 2 named twice: CUDA shows none
    with pytest.raises(vllm_double.EngineConfigError, match="does not know how CUDA reads"):
        vllm_double.pick_gpus("MIG-1", 1, gpus)


def test_config_env_overrides_file(gpus: gpu_state.GpuConfig) -> None:
    raw = {"vllm": {"ttft_ms": 5, "faults": ["never_healthy"]}}
    config = gpu_state.GpuConfig(raw=raw)
    cfg = vllm_double.DoubleConfig.load(config, env={"VLLM_DOUBLE_ITL_MS": "7"})
    assert (cfg.ttft_ms, cfg.itl_ms, cfg.faults) == (5.0, 7.0, ["never_healthy"])
    with pytest.raises(ValueError, match="unknown vllm double faults"):
        vllm_double.DoubleConfig.load(config, env={"VLLM_DOUBLE_FAULTS": "explode"})


# --------------------------------------------------------------------------------------
# HTTP API in-process


@pytest.fixture
def server() -> Iterator[tuple[int, vllm_double.ServerState]]:
    cfg = vllm_double.DoubleConfig(ttft_ms=80, itl_ms=30, accepted_per_step=2)
    state = vllm_double.ServerState(
        model="org/m",
        served_names=["m"],
        max_model_len=4096,
        api_keys=[],
        cfg=cfg,
        num_spec_tokens=3,
        spec_enabled=True,
    )
    srv = vllm_double.make_server("127.0.0.1", 0, state)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield srv.server_address[1], state
    finally:
        srv.shutdown()
        srv.server_close()


def test_streamed_chat_follows_the_schedule_and_reports_usage(
    server: tuple[int, vllm_double.ServerState],
) -> None:
    port, state = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "one two three"}],
        "max_tokens": 7,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    sent = time.monotonic()
    conn.request("POST", "/v1/chat/completions", json.dumps(body))
    resp = conn.getresponse()
    assert resp.status == 200
    assert resp.headers["content-type"].startswith("text/event-stream")
    arrivals: list[tuple[float, Any]] = []
    for raw in resp:
        line = raw.decode().strip()
        if line.startswith("data: "):
            data = line[6:]
            arrivals.append(
                (time.monotonic() - sent, data if data == "[DONE]" else json.loads(data))
            )
    events = [e for _, e in arrivals]
    assert events[-1] == "[DONE]"
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    contents = [e["choices"][0]["delta"]["content"] for e in events[1:-2]]
    assert [len(c.split()) for c in contents] == [1, 3, 3]
    assert events[-2]["choices"] == []
    assert events[-2]["usage"] == {"prompt_tokens": 3, "total_tokens": 10, "completion_tokens": 7}
    ttft = arrivals[0][0]
    assert 0.08 <= ttft < 0.3
    gaps = [b[0] - a[0] for a, b in itertools.pairwise(arrivals[1:4])]
    assert all(0.02 <= g < 0.2 for g in gaps)
    m = state.metrics
    assert (m.drafts, m.draft_tokens, m.accepted, m.generation_tokens) == (2, 6, 4, 7)


def test_models_health_and_unknown_model(server: tuple[int, vllm_double.ServerState]) -> None:
    port, _ = server
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", "/health")
    health = conn.getresponse()
    assert (health.status, health.read()) == (200, b"")
    conn.request("GET", "/v1/models")
    models = json.loads(conn.getresponse().read())
    assert [m["id"] for m in models["data"]] == ["m"]
    conn.request("POST", "/v1/completions", json.dumps({"model": "x", "prompt": "a"}))
    resp = conn.getresponse()
    assert resp.status == 404
    assert json.loads(resp.read())["message"] == "The model `x` does not exist."
