"""Client benchmark: servebench must never be the bottleneck.

Target: on 2 cores, ≥ 5,000 streamed output tokens/s across ≥ 64 concurrent streams
against the vLLM double, with the client's own per-token overhead reported; guidellm's
figures on the same load, measured in the same run (the machine may be shared: both tools
see the same neighbours).

Run: `.venv/bin/python benchmarks/bench_client.py [--streams 64] [--tokens-per-s 100]
[--max-tokens 256] [--requests 192] [--no-guidellm] [--guidellm PATH]`.

What it does:
- starts the double's API alone in its own process (`tests/doubles/vllm_double_http.py`):
  every stream emits `--tokens-per-s` tokens per second, one token per chunk (the most
  events per token, the client's worst case);
- servebench runs `--requests` requests with `--streams` concurrent streams; figures:
  output tok/s, TPOT/ITL against the schedule's truth (a lagging client shows as TPOT and
  ITL above it), the client's CPU time per output token (µs, user + system, from
  getrusage) and its share of one core; the double's CPU time too (from /proc), so one
  sees which side works hardest;
- guidellm on the same double, same streams, requests and prompts (its CPU from the
  children's rusage: its worker processes included).
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.peer_guidellm import ensure_guidellm, run_guidellm, write_prompts  # noqa: E402
from servebench.prompts import select_prompts  # noqa: E402
from servebench.runner import RunSettings, run_sync  # noqa: E402
from tests.doubles.vllm_double_http import spawn_api_process  # noqa: E402

TARGET_TOK_S = 5000
TARGET_STREAMS = 64


def _proc_cpu_s(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat (fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100  # USER_HZ is 100 on Linux


def _self_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--streams", type=int, default=TARGET_STREAMS)
    p.add_argument("--tokens-per-s", type=float, default=100.0, help="per stream")
    p.add_argument("--ttft-ms", type=float, default=50.0)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument("--requests", type=int, default=192)
    p.add_argument("--no-guidellm", action="store_true")
    p.add_argument("--guidellm", help="guidellm executable (default: var/guidellm-venv)")
    args = p.parse_args()

    proc, url = spawn_api_process(
        "--ttft-ms", str(args.ttft_ms), "--tokens-per-s", str(args.tokens_per_s)
    )
    try:
        truth_tpot_ms = 1000 / args.tokens_per_s
        settings = RunSettings(
            url=url,
            prompts="chat",
            max_tokens=args.max_tokens,
            concurrency=[args.streams],
            num_requests=args.requests,
            warmup=0,
        )
        print(
            f"load: {args.streams} streams × {args.tokens_per_s:g} tok/s "
            f"(= {args.streams * args.tokens_per_s:,.0f} tok/s offered), {args.requests} "
            f"requests × {args.max_tokens} tokens, one token per chunk; TTFT "
            f"{args.ttft_ms:g} ms, TPOT {truth_tpot_ms:.2f} ms (the double's schedule)"
        )
        print("shared machine: figures include whatever else runs; both tools run here, now")
        double_cpu0, cpu0, wall0 = _proc_cpu_s(proc.pid), _self_cpu_s(), time.perf_counter()
        result = run_sync(settings)
        wall = time.perf_counter() - wall0
        cpu = _self_cpu_s() - cpu0
        double_cpu = _proc_cpu_s(proc.pid) - double_cpu0
        level = result.levels[-1]
        tokens = level.total_output_tokens
        print("\nservebench")
        print(f"  completed {level.completed}, failed {level.failed}")
        print(
            f"  output tok/s          {level.output_throughput:9,.0f}   (target ≥ {TARGET_TOK_S:,})"
        )
        print(f"  TTFT p50 / p99 ms     {level.ttft_ms.median:9.2f} / {level.ttft_ms.p99:.2f}")
        print(
            f"  TPOT p50 / p99 ms     {level.tpot_ms.median:9.3f} / {level.tpot_ms.p99:.3f}"
            f"   (schedule {truth_tpot_ms:.3f}; p50 off by "
            f"{(level.tpot_ms.median / truth_tpot_ms - 1) * 100:+.2f}%)"
        )
        print(f"  ITL p50 / p99 ms      {level.itl_ms.median:9.3f} / {level.itl_ms.p99:.3f}")
        print(
            f"  client CPU            {cpu:9.2f} s = {cpu / tokens * 1e6:.1f} µs per output "
            f"token, {cpu / wall * 100:.0f}% of one core over {wall:.1f} s"
        )
        print(
            f"  double CPU            {double_cpu:9.2f} s = {double_cpu / tokens * 1e6:.1f} µs "
            "per token (the server side)"
        )
        ok = level.output_throughput >= TARGET_TOK_S and args.streams >= TARGET_STREAMS
        print(f"  target met: {'yes' if ok and not result.incomplete else 'NO'}")
        if args.no_guidellm:
            return 0 if ok else 1
        exe = ensure_guidellm(args.guidellm)
        with tempfile.TemporaryDirectory(prefix="bench-client-") as tmp:
            prompts_path = Path(tmp) / "prompts.jsonl"
            write_prompts(select_prompts("chat", args.requests, 0), args.max_tokens, prompts_path)
            g = run_guidellm(
                exe,
                url=url,
                prompts_path=prompts_path,
                streams=args.streams,
                requests=args.requests,
                workdir=Path(tmp),
            )
        print(f"\nguidellm {exe} (same double, same load)")
        print(f"  completed {g.completed}, errored {g.errored}")
        print(f"  output tok/s          {g.output_tok_s:9,.0f}")
        print(f"  TTFT mean / p50 ms    {g.ttft_ms_mean:9.2f} / {g.ttft_ms_median:.2f}")
        print(f"  TPOT mean / p50 ms    {g.tpot_ms_mean:9.3f} / {g.tpot_ms_median:.3f}")
        per_token = g.cpu_s / max(g.output_tokens, 1) * 1e6
        print(
            f"  CPU                   {g.cpu_s:9.2f} s = {per_token:.1f} µs per output token "
            f"(all its processes, start-up included; wall {g.wall_s:.1f} s)"
        )
        return 0 if ok else 1
    finally:
        proc.terminate()
        proc.wait(timeout=10)


if __name__ == "__main__":
    sys.exit(main())
