"""Run `vllm bench serve` on the host itself (over the host's transport) and import its
`--save-result` JSON into servebench's schema.

Only an approved executable runs: one of the vLLM executables of units approved and
pushed to the host, or the admin's audited list (`deploys.selectors.host_probe_executables`,
the probe's rule), each checked by `hostops.executables.executable_problem` (owned by root,
nobody else can change it). Every run is an audit event with its argv. The prompts are the
same as servebench's (written to a temporary JSONL file on the host, vLLM's `custom`
dataset), one `vllm bench serve` per concurrency level (`--max-concurrency`), each bounded
by `timeout(1)` on the host.

Source of the options: vllm/benchmarks/serve.py `add_cli_args` and
vllm/benchmarks/datasets.py (`--dataset-name custom --dataset-path FILE.jsonl`, one
`{"prompt": ...}` per line; `--custom-output-len`).
"""

from __future__ import annotations

import json
import secrets
from typing import Any

from audit.services import record
from deploys.connect import transport_for
from deploys.selectors import host_probe_executables
from hostops.channel import TransportError
from hostops.executables import executable_problem
from servebench.prompts import select_prompts
from servebench.runner import RunSettings
from servebench.schema import ENGINE_VLLM, BenchResult
from servebench.vllm_import import VllmResultError, from_vllm_dict

VLLM_BENCH_RAN = "bench.vllm_bench_ran"
RUN_TIMEOUT_S = 3600


class VllmBenchError(Exception):
    """`vllm bench serve` could not run or gave no result; says what and where."""


def vllm_bench_argv(
    executable: str, settings: RunSettings, concurrency: int | None, dataset: str, out_dir: str
) -> list[str]:
    argv = [
        "timeout",
        str(RUN_TIMEOUT_S),
        executable,
        "bench",
        "serve",
        "--backend",
        "openai-chat" if settings.endpoint == "chat" else "openai",
        "--base-url",
        settings.url,
        "--endpoint",
        "/v1/chat/completions" if settings.endpoint == "chat" else "/v1/completions",
        "--dataset-name",
        "custom",
        "--dataset-path",
        dataset,
        "--custom-output-len",
        str(settings.max_tokens),
        "--num-prompts",
        str(settings.num_requests or 32),
        "--seed",
        str(settings.seed),
        "--percentile-metrics",
        "ttft,tpot,itl,e2el",
        "--metric-percentiles",
        "50,90,99",
        "--save-result",
        "--save-detailed",
        "--result-dir",
        out_dir,
        "--result-filename",
        f"c{concurrency or 0}.json",
    ]
    if settings.model:
        argv += ["--model", settings.model]
    if settings.ignore_eos:
        argv.append("--ignore-eos")
    if concurrency:
        argv += ["--max-concurrency", str(concurrency)]
    if settings.request_rate:
        argv += ["--request-rate", str(settings.request_rate)]
    return argv


def run_vllm_bench(host: Any, settings: RunSettings, actor: Any = None) -> BenchResult:
    """Every level of `settings` measured by the host's own vLLM; one merged result."""
    transport = transport_for(host)
    try:
        executable = _approved_executable(host, transport)
        tmp = f"/tmp/specadmin-bench-{secrets.token_hex(6)}"
        transport.run_checked(["mkdir", "-m", "700", tmp])
        try:
            prompts = select_prompts(settings.prompts, settings.num_requests or 32, settings.seed)
            dataset = "".join(json.dumps({"prompt": p.text}) + "\n" for p in prompts)
            transport.write_file_atomic(f"{tmp}/prompts.jsonl", dataset.encode(), 0o600)
            merged: BenchResult | None = None
            for concurrency in settings.concurrency:
                argv = vllm_bench_argv(
                    executable, settings, concurrency, f"{tmp}/prompts.jsonl", tmp
                )
                record(
                    kind=VLLM_BENCH_RAN,
                    actor=actor,
                    object_type="deploys.host",
                    object_id=str(host.pk),
                    object_repr=host.name,
                    payload={"argv": argv},
                    host_name=host.name,
                )
                result = transport.run(argv, timeout=RUN_TIMEOUT_S + 30)
                if not result.ok:
                    raise VllmBenchError(
                        f"`vllm bench serve` on {host.name} exited {result.exit_code}: "
                        + (result.stderr_text or result.stdout_text).strip()[-500:]
                    )
                raw = transport.read_file(f"{tmp}/c{concurrency or 0}.json")
                if raw is None:
                    raise VllmBenchError(f"`vllm bench serve` on {host.name} saved no result")
                level_result = from_vllm_dict(json.loads(raw), source=f"{host.name}:{tmp}")
                if merged is None:
                    merged = level_result
                    merged.settings = settings.to_dict() | {"vllm": merged.settings}
                else:
                    merged.levels += level_result.levels
                    merged.incomplete = merged.incomplete or level_result.incomplete
            if merged is None:
                raise VllmBenchError("no concurrency level to measure")
            merged.engine = ENGINE_VLLM
            return merged
        finally:
            transport.run(["rm", "-rf", "--", tmp])
    except (TransportError, VllmResultError, ValueError) as exc:
        raise VllmBenchError(f"`vllm bench serve` on {host.name}: {exc}") from None
    finally:
        transport.close()


def _approved_executable(host: Any, transport: Any) -> str:
    problems = []
    for executable in host_probe_executables(host=host):
        problem = executable_problem(transport, executable)
        if problem is None:
            return executable
        problems.append(f"{executable}: {problem}")
    raise VllmBenchError(
        f"no approved vLLM executable to run on {host.name}"
        + (f" ({'; '.join(problems)})" if problems else " (no approved, pushed unit names one)")
    )
