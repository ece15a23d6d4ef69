"""Peer check: servebench and guidellm measure the same vLLM double in the same run and
must agree within 3% on TTFT, TPOT and output tok/s.

Run: `.venv/bin/python benchmarks/bench_peer_guidellm.py [--guidellm PATH]
[--tokens-per-s 74] [--ttft-ms 100] [--max-tokens 128]`.

For each load (concurrency 1 × 16 requests, concurrency 8 × 64 requests) both tools send
the same prompts (the seed's mix, one JSONL file) to one double process whose schedule is
known (the truth column): TTFT `--ttft-ms`, then `--tokens-per-s` tokens per second per
stream. Compared: TTFT mean and median, TPOT mean (vLLM's definition; guidellm calls it
`inter_token_latency_ms`), output tok/s (tokens / each tool's own run duration). The
machine may be shared with other work: both tools run back to back in this one run.
Exit status 1 when any figure differs by more than 3%.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.peer_guidellm import ensure_guidellm, run_guidellm, write_prompts  # noqa: E402
from servebench.prompts import select_prompts  # noqa: E402
from servebench.runner import RunSettings, run_sync  # noqa: E402
from tests.doubles.vllm_double_http import spawn_api_process  # noqa: E402

LOADS = ((1, 16), (8, 64))  # (concurrency, requests)
TOLERANCE_PCT = 3.0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--guidellm", help="guidellm executable (default: var/guidellm-venv)")
    p.add_argument("--tokens-per-s", type=float, default=74.0, help="per stream (the seed's)")
    p.add_argument("--ttft-ms", type=float, default=100.0)
    p.add_argument("--max-tokens", type=int, default=128)
    args = p.parse_args()
    exe = ensure_guidellm(args.guidellm)
    proc, url = spawn_api_process(
        "--ttft-ms", str(args.ttft_ms), "--tokens-per-s", str(args.tokens_per_s)
    )
    truth_tpot = 1000 / args.tokens_per_s
    worst = 0.0
    print(
        f"double: TTFT {args.ttft_ms:g} ms, {args.tokens_per_s:g} tok/s per stream "
        f"(TPOT {truth_tpot:.3f} ms), {args.max_tokens} tokens per answer; shared machine, "
        "both tools in this run"
    )
    header = (
        f"{'load':>10} {'figure':<16} {'truth':>9} {'servebench':>11} {'guidellm':>9} {'diff':>7}"
    )
    try:
        with tempfile.TemporaryDirectory(prefix="bench-peer-") as tmp:
            for concurrency, requests in LOADS:
                prompts_path = Path(tmp) / f"prompts-{concurrency}.jsonl"
                write_prompts(select_prompts("mix", requests, 0), args.max_tokens, prompts_path)
                ours = run_sync(
                    RunSettings(
                        url=url,
                        prompts=str(prompts_path),
                        max_tokens=args.max_tokens,
                        concurrency=[concurrency],
                        num_requests=requests,
                        warmup=0,
                    )
                ).levels[0]
                peer = run_guidellm(
                    exe,
                    url=url,
                    prompts_path=prompts_path,
                    streams=concurrency,
                    requests=requests,
                    workdir=Path(tmp),
                )
                stream_s = args.ttft_ms / 1000 + (args.max_tokens - 1) / args.tokens_per_s
                rows = [
                    ("TTFT mean ms", args.ttft_ms, ours.ttft_ms.mean, peer.ttft_ms_mean),
                    ("TTFT p50 ms", args.ttft_ms, ours.ttft_ms.median, peer.ttft_ms_median),
                    ("TPOT mean ms", truth_tpot, ours.tpot_ms.mean, peer.tpot_ms_mean),
                    (
                        "output tok/s",
                        concurrency * args.max_tokens / stream_s,
                        ours.output_throughput,
                        peer.output_tok_s,
                    ),
                ]
                print(f"\n{header}")
                label = f"c={concurrency}×{requests}"
                for name, truth, a, b in rows:
                    diff = (b / a - 1) * 100
                    worst = max(worst, abs(diff))
                    print(f"{label:>10} {name:<16} {truth:9.2f} {a:11.2f} {b:9.2f} {diff:+6.2f}%")
                print(
                    f"{'':>10} completed: servebench {ours.completed}/{requests}, "
                    f"guidellm {peer.completed}/{requests} ({peer.errored} errored)"
                )
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    verdict = "agree" if worst <= TOLERANCE_PCT else "DISAGREE"
    print(f"\nlargest difference {worst:.2f}% (tolerance {TOLERANCE_PCT:g}%): {verdict}")
    return 0 if worst <= TOLERANCE_PCT else 1


if __name__ == "__main__":
    sys.exit(main())
