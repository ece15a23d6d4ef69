"""What the SSH port forward adds to a benchmark: the same vLLM double on a real systemd +
sshd test host, bound to 127.0.0.1, measured by servebench directly and through
`SSHTransport.forward_local` (the path the deploy job takes for a loopback-bound server),
alternately, in the same run.

Run (as root, like the test hosts): `.venv/bin/python benchmarks/forward_overhead.py
[--rounds 3] [--tokens-per-s 74] [--concurrency 1 32]`.

The test host shares this machine's network namespace, so "directly" is possible here
(it is not from a real worker). Prints TTFT p50, TPOT p50 and output tok/s per concurrency,
each the median over the rounds, and the forward's difference. Figures taken on a shared or
busy machine are noisy: say so when you report them. Only loopback; every wait is bounded.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hostops.channel.ssh import SSHTransport  # noqa: E402  (after the path insert)
from servebench.runner import RunSettings, run_sync  # noqa: E402
from tests.ports import listening_port  # noqa: E402
from tests.testhost.host import TestHost, boot_hosts  # noqa: E402

FIGURES = ("ttft_p50_ms", "tpot_p50_ms", "output_tok_s")


def start_double(host: TestHost, tokens_per_s: float) -> int:
    """The double on port 0 (the kernel picks a free port as it binds); the port it got."""
    env = {
        "CUDA_VISIBLE_DEVICES": "0",
        "VLLM_DOUBLE_LOAD_S": "0",
        "VLLM_DOUBLE_TTFT_MS": "60",
        "VLLM_DOUBLE_TOKENS_PER_S": str(tokens_per_s),
    }
    argv = ["/usr/local/bin/vllm", "serve", "m", "--host", "127.0.0.1", "--port", "0"]
    setenv = [f"--setenv={k}={v}" for k, v in env.items()]
    host.ssh(["systemd-run", "--unit=vllm-forward-bench", *setenv, "--", *argv], check=True)
    return listening_port(host, "vllm-forward-bench", timeout=60)


def measure(url: str, concurrency: int, requests: int, max_tokens: int) -> dict[str, float]:
    settings = RunSettings(
        url=url,
        prompts="chat",
        max_tokens=max_tokens,
        concurrency=[concurrency],
        num_requests=requests,
        warmup=1,
    )
    result = run_sync(settings)
    if result.incomplete:
        raise SystemExit(f"incomplete measurement at {url}: {result.error}")
    [level] = result.levels
    return {
        "ttft_p50_ms": level.ttft_ms.median,
        "tpot_p50_ms": level.tpot_ms.median,
        "output_tok_s": level.output_throughput,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens-per-s", type=float, default=74.0, help="per stream")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 32])
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args(argv)
    [host] = boot_hosts(1, gpu_count=1)
    try:
        port = start_double(host, args.tokens_per_s)
        transport = SSHTransport(
            host.host,
            host.port,
            host.user,
            pinned_host_key=host.host_key,
            key_filename=host.key_path,
        )
        with transport:
            for concurrency in args.concurrency:
                requests = max(8, 2 * concurrency)
                rows: dict[str, list[dict[str, float]]] = {"direct": [], "forward": []}
                for _ in range(args.rounds):
                    rows["direct"].append(
                        measure(f"http://127.0.0.1:{port}", concurrency, requests, args.max_tokens)
                    )
                    with transport.forward_local("127.0.0.1", port) as (address, local):
                        rows["forward"].append(
                            measure(
                                f"http://{address}:{local}", concurrency, requests, args.max_tokens
                            )
                        )
                report(concurrency, args.tokens_per_s, rows)
    finally:
        host.stop()
    return 0


def report(concurrency: int, tokens_per_s: float, rows: dict[str, list[dict[str, float]]]) -> None:
    medians = {
        way: {f: statistics.median(r[f] for r in runs) for f in FIGURES}
        for way, runs in rows.items()
    }
    print(
        f"concurrency {concurrency} (double: {tokens_per_s:g} tok/s per stream, TPOT "
        f"{1000 / tokens_per_s:.2f} ms; median of {len(rows['direct'])} rounds)"
    )
    for figure in FIGURES:
        direct, forward = medians["direct"][figure], medians["forward"][figure]
        change = (forward - direct) / direct * 100 if direct else 0.0
        print(f"  {figure:13} direct {direct:9.2f}   forward {forward:9.2f}   ({change:+.1f}%)")


if __name__ == "__main__":
    raise SystemExit(main())
