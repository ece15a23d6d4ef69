"""TEST DOUBLE for `vllm bench serve`: the options specadmin passes, a small streaming
client (stdlib threads, no aiohttp: the test host's Python has only the stdlib), and a
`--save-result` file with the keys of vllm/benchmarks/serve.py (`benchmark()`'s result
plus what `main()` adds), raw per-request lists included.

Only what specadmin uses is implemented: the `custom` dataset (JSONL, `{"prompt": ...}`),
`--custom-output-len`, `--num-prompts`, `--max-concurrency`, `--ignore-eos`, `--seed`,
`--backend openai|openai-chat`, `--base-url` + `--endpoint`, `--save-result`,
`--result-dir`, `--result-filename`. Timing follows vLLM's request functions: the clock
starts before the POST, TTFT at the first event with `choices`, ITL per such event, latency
at the last one, output tokens from the usage block.
"""

from __future__ import annotations

import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vllm bench serve")
    p.add_argument("--backend", default="openai")
    p.add_argument("--base-url", required=True)
    p.add_argument("--endpoint", default="/v1/completions")
    p.add_argument("--model")
    p.add_argument("--dataset-name", default="custom", choices=["custom"])
    p.add_argument("--dataset-path", required=True)
    p.add_argument("--custom-output-len", type=int, default=256)
    p.add_argument("--num-prompts", type=int, default=1000)
    p.add_argument("--max-concurrency", type=int)
    p.add_argument("--request-rate", default="inf")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--ignore-eos", action="store_true")
    p.add_argument("--percentile-metrics", default="ttft,tpot,itl")
    p.add_argument("--metric-percentiles", default="99")
    p.add_argument("--save-result", action="store_true")
    p.add_argument("--save-detailed", action="store_true")
    p.add_argument("--result-dir", default=".")
    p.add_argument("--result-filename")
    return p


def _one(base: urllib.parse.SplitResult, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ttft": 0.0,
        "itl": [],
        "latency": 0.0,
        "output_len": 0,
        "prompt_len": 0,
        "error": "",
    }
    conn = http.client.HTTPConnection(base.hostname, base.port or 80, timeout=120)
    start = time.perf_counter()
    out["start_time"] = start
    try:
        conn.request("POST", endpoint, json.dumps(body), {"content-type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            out["error"] = f"HTTP {resp.status}"
            return out
        last, first = start, True
        for raw in resp:
            line = raw.decode().strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            data = json.loads(line[6:])
            now = time.perf_counter()
            if data.get("choices"):
                if first:
                    out["ttft"], first = now - start, False
                else:
                    out["itl"].append(now - last)
                last = now
            elif usage := data.get("usage"):
                out["output_len"] = usage.get("completion_tokens", 0)
                out["prompt_len"] = usage.get("prompt_tokens", 0)
        out["latency"] = last - start
        if first:
            out["error"] = "Never received a valid chunk to calculate TTFT."
    except (OSError, ValueError, http.client.HTTPException) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    finally:
        conn.close()
    return out


def bench_serve(argv: Sequence[str]) -> int:
    args = _parser().parse_args(argv)
    prompts = [
        json.loads(line)["prompt"]
        for line in Path(args.dataset_path).read_text().splitlines()
        if line.strip()
    ]
    prompts = [prompts[i % len(prompts)] for i in range(args.num_prompts)]
    base = urllib.parse.urlsplit(args.base_url)
    chat = args.backend == "openai-chat"
    model = args.model or "m"
    results: list[dict[str, Any]] = [{} for _ in prompts]
    next_index = 0
    lock = threading.Lock()

    def worker() -> None:
        nonlocal next_index
        while True:
            with lock:
                i = next_index
                next_index += 1
            if i >= len(prompts):
                return
            body: dict[str, Any] = {
                "model": model,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
            if chat:
                body["messages"] = [{"role": "user", "content": prompts[i]}]
                body["max_completion_tokens"] = args.custom_output_len
            else:
                body["prompt"] = prompts[i]
                body["max_tokens"] = args.custom_output_len
            if args.ignore_eos:
                body["ignore_eos"] = True
            results[i] = _one(base, args.endpoint, body)

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(args.max_concurrency or len(prompts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    duration = time.perf_counter() - started
    ok = [r for r in results if not r["error"]]
    output = sum(r["output_len"] for r in ok)
    print("============ Serving Benchmark Result ============")
    print(f"Successful requests: {len(ok)}\nBenchmark duration (s): {duration:.2f}")
    if args.save_result:
        result = {
            "date": datetime.now().strftime("%Y%m%d-%H%M%S"),
            "backend": args.backend,
            "model_id": model,
            "num_prompts": args.num_prompts,
            "request_rate": args.request_rate,
            "max_concurrency": args.max_concurrency,
            "duration": duration,
            "completed": len(ok),
            "failed": len(results) - len(ok),
            "total_input_tokens": sum(r["prompt_len"] for r in ok),
            "total_output_tokens": output,
            "request_throughput": len(ok) / duration,
            "output_throughput": output / duration,
            "input_lens": [r["prompt_len"] for r in results],
            "output_lens": [r["output_len"] for r in results],
            "ttfts": [r["ttft"] for r in results],
            "itls": [r["itl"] for r in results],
            "latencies": [r["latency"] for r in results],
            "start_times": [r["start_time"] for r in results],
            "errors": [r["error"] for r in results],
        }
        name = args.result_filename or f"vllm-{model}.json"
        (Path(args.result_dir) / name).write_text(json.dumps(result))
    return 0


def main(argv: Sequence[str]) -> int:
    """`vllm bench serve …` (argv after `bench`)."""
    if list(argv[:1]) != ["serve"]:
        sys.stderr.write("vllm bench: only `serve` is implemented by the double\n")
        return 2
    return bench_serve(argv[1:])
