"""guidellm as the peer of servebench: its own virtual environment, one run, its figures.

guidellm (PyPI, vLLM project) pulls in torch, transformers, datasets and sanic (~6 GB with
torch's CUDA wheels), so it is not in requirements.txt: the benchmark scripts create
`var/guidellm-venv` on first use (`pip install guidellm==GUIDELLM_VERSION`), or use the
executable given with `--guidellm`. See docs/dependencies.md.

guidellm's names differ from vLLM's; the same quantity under both names:
- vLLM TPOT = (E2EL − TTFT) / (tokens − 1)  ==  guidellm `inter_token_latency_ms`;
- guidellm `time_per_output_token_ms` = E2EL / tokens (TTFT included): not vLLM's TPOT;
- output tok/s: guidellm's total output tokens / its benchmark duration.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from servebench.prompts import Prompt

REPO = Path(__file__).resolve().parents[1]
GUIDELLM_VERSION = "0.8.1"
DEFAULT_VENV = REPO / "var" / "guidellm-venv"


def ensure_guidellm(explicit: str | None) -> Path:
    """The guidellm executable: the given one, or the project's own venv (created once)."""
    if explicit:
        return Path(explicit)
    exe = DEFAULT_VENV / "bin" / "guidellm"
    if exe.exists():
        return exe
    print(f"creating {DEFAULT_VENV} with guidellm=={GUIDELLM_VERSION} (once; large)", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(DEFAULT_VENV)], check=True)
    pip = [str(DEFAULT_VENV / "bin" / "pip"), "install", "-q"]
    subprocess.run([*pip, f"guidellm=={GUIDELLM_VERSION}"], check=True)
    return exe


def write_prompts(prompts: list[Prompt], max_tokens: int, path: Path) -> None:
    """One JSONL file both tools read: guidellm's `output_tokens_count` sets max_tokens."""
    with path.open("w") as f:
        for p in prompts:
            f.write(json.dumps({"prompt": p.text, "output_tokens_count": max_tokens}) + "\n")


@dataclass
class GuidellmRun:
    ttft_ms_mean: float
    ttft_ms_median: float
    tpot_ms_mean: float  # its inter_token_latency_ms = vLLM's TPOT
    tpot_ms_median: float
    output_tok_s: float
    output_tokens: int
    completed: int
    errored: int
    duration_s: float
    cpu_s: float  # guidellm's processes, user + system
    wall_s: float


def run_guidellm(
    exe: Path,
    *,
    url: str,
    prompts_path: Path,
    streams: int,
    requests: int,
    workdir: Path,
) -> GuidellmRun:
    """Closed-loop `concurrent` profile with `streams` streams, `requests` requests."""
    out = workdir / "guidellm-out.json"
    scenario = {
        "spec": {
            "backend": {
                "kind": "openai_http",
                "target": url,
                "request_format": "/v1/completions",
            },
            "profile": {"kind": "concurrent", "streams": streams},
            "data": [{"kind": "json_file", "path": str(prompts_path)}],
            "constraints": [{"kind": "max_requests", "count": requests}],
            "outputs": [{"kind": "json", "path": str(out)}],
        }
    }
    scenario_path = workdir / "guidellm-scenario.json"
    scenario_path.write_text(json.dumps(scenario))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(
        [str(exe), "run", "--scenario", str(scenario_path), "--disable-progress"],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=1800,
        env=os.environ | {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"},
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not out.exists():
        raise RuntimeError(
            f"guidellm failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    bench = json.loads(out.read_text())["benchmarks"][0]
    m = bench["metrics"]
    ok = m["output_token_count"]["successful"]
    totals = m["request_totals"]
    duration = float(bench["duration"])
    return GuidellmRun(
        ttft_ms_mean=m["time_to_first_token_ms"]["successful"]["mean"],
        ttft_ms_median=m["time_to_first_token_ms"]["successful"]["median"],
        tpot_ms_mean=m["inter_token_latency_ms"]["successful"]["mean"],
        tpot_ms_median=m["inter_token_latency_ms"]["successful"]["median"],
        output_tok_s=ok["total_sum"] / duration,
        output_tokens=int(ok["total_sum"]),
        completed=int(totals["successful"]),
        errored=int(totals["errored"]),
        duration_s=duration,
        cpu_s=(after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        wall_s=wall,
    )
