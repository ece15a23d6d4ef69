"""The benchmark against a real GPU server: baseline vs prompt lookup.

Starts the test-only server (`tests/gpu_test_server`, a random-weight causal LM run by
transformers) twice on the same device, both kept loaded: the baseline and the variant
with transformers' prompt-lookup (n-gram) assisted decoding. servebench measures each at
concurrency 1 and 8 with the seed's prompt mix, `--repeats` times (interleaved per level);
the regression gate compares variant against baseline. While the gate says noisy, both
are measured again, round by round, within `--noisy-budget` seconds
(servebench.gate.measure_until_decided, as the deploy job does for its candidate); the
first verdict and the final one are printed with how sure each is. Prints a table — output tok/s,
TTFT p50, TPOT p50/p99, acceptance (from the server's counters), the spread across repeats —
and the gate's verdict; writes everything as JSON to `$OUT/bench_real_gpu.json` when `$OUT`
is set (or to `--json PATH`).

Needs only torch, transformers and aiohttp (no specadmin dependencies):
  python benchmarks/bench_real_gpu.py                      # GPU: size "gpu" on cuda
  python benchmarks/bench_real_gpu.py --device cpu --size tiny --requests 4 --max-tokens 16
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from servebench.gate import (  # noqa: E402
    PASS,
    gate,
    headline,
    how_sure,
    measure_until_decided,
    verdict_certainty,
)
from servebench.report import format_gate  # noqa: E402
from servebench.runner import RunSettings, run_sync  # noqa: E402
from servebench.schema import BenchResult, LevelResult  # noqa: E402

VARIANTS = (("baseline", 0), ("prompt-lookup", None))  # None: --prompt-lookup-tokens


def start_server(
    *, device: str, size: str | None, prompt_lookup: int, timeout_s: float = 900
) -> tuple[subprocess.Popen[str], str]:
    """The test server in a child process; returns it and its URL once the model is loaded."""
    cmd = [sys.executable, "-m", "tests.gpu_test_server", "--port", "0", "--device", device]
    if size:
        cmd += ["--size", size]
    if prompt_lookup:
        cmd += ["--prompt-lookup-tokens", str(prompt_lookup)]
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    started = time.monotonic()
    line = proc.stdout.readline().strip()  # blocks until the model is built
    if not line.startswith("serving "):
        proc.kill()
        raise RuntimeError(f"the test server did not start: {line!r} (exit {proc.wait()})")
    print(f"  {line} after {time.monotonic() - started:.1f} s", flush=True)
    if time.monotonic() - started > timeout_s:
        print("  (slow start)")
    return proc, line.split()[1]


def stop_server(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _fmt_spread(values: list[float]) -> str:
    """Relative spread across repeats: (max - min) / median, in percent."""
    if len(values) < 2:
        return "-"
    med = statistics.median(values)
    return f"{(max(values) - min(values)) / med * 100:.1f}%" if med else "-"


def table(results: dict[str, BenchResult]) -> str:
    head = (
        f"{'variant':<14} {'conc':>4} {'tok/s (each repeat)':>22} {'spread':>7} "
        f"{'TTFT p50':>9} {'TPOT p50':>9} {'TPOT p99':>9} {'accept':>7} {'acc.len':>7}"
    )
    lines = [head, "-" * len(head)]
    for name, result in results.items():
        for conc in result.concurrencies:
            reps: list[LevelResult] = result.repeats_of(conc)
            tok = [lv.output_throughput for lv in reps]
            spec = [lv.spec_decode for lv in reps if lv.spec_decode]
            accept = statistics.mean(s.acceptance_rate for s in spec) if spec else None
            length = statistics.mean(s.acceptance_length for s in spec) if spec else None
            lines.append(
                f"{name:<14} {conc:>4} {' / '.join(f'{t:.1f}' for t in tok):>22} "
                f"{_fmt_spread(tok):>7} "
                f"{statistics.median(lv.ttft_ms.median for lv in reps):9.1f} "
                f"{statistics.median(lv.tpot_ms.median for lv in reps):9.2f} "
                f"{statistics.median(lv.tpot_ms.p99 for lv in reps):9.2f} "
                f"{f'{accept:.1f}%' if accept is not None else '-':>7} "
                f"{f'{length:.2f}' if length is not None else '-':>7}"
            )
    lines.append(
        "times in ms; TTFT includes queueing (the test server decodes one request at a time)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto", help="auto, cuda, cpu")
    p.add_argument("--size", choices=("gpu", "tiny"), help="default: gpu on CUDA, tiny on CPU")
    p.add_argument("--concurrency", default="1,8")
    p.add_argument("--requests", type=int, default=12, help="per level and repeat")
    p.add_argument("--max-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--prompt-lookup-tokens", type=int, default=3)
    p.add_argument("--threshold", type=float, default=5.0)
    p.add_argument(
        "--noisy-budget", type=float, default=180.0, help="seconds for more repeats while noisy"
    )
    p.add_argument("--json", type=Path, help="default: $OUT/bench_real_gpu.json if $OUT is set")
    args = p.parse_args(argv)
    levels: list[int | None] = [int(c) for c in args.concurrency.split(",")]
    results: dict[str, BenchResult] = {}
    started = time.monotonic()

    def settings(url: str, repeats: int, warmup: int = 2) -> RunSettings:
        return RunSettings(
            url=url,
            prompts="mix",
            seed=0,
            max_tokens=args.max_tokens,
            concurrency=levels,
            num_requests=args.requests,
            warmup=warmup,
            repeats=repeats,
            stall_timeout_s=600,
        )

    servers: dict[str, tuple[subprocess.Popen[str], str]] = {}
    try:
        for name, lookup in VARIANTS:
            lookup_tokens = args.prompt_lookup_tokens if lookup is None else lookup
            print(f"{name}: starting the test server", flush=True)
            servers[name] = start_server(
                device=args.device, size=args.size, prompt_lookup=lookup_tokens
            )
        took: dict[str, float] = {}
        for name, (_, url) in servers.items():
            began = time.monotonic()
            results[name] = run_sync(settings(url, args.repeats))
            took[name] = time.monotonic() - began
            print(f"{name}: measured", flush=True)
        first = gate(results["baseline"], results["prompt-lookup"], args.threshold)
        print()
        print(table(results))
        print()
        print("first verdict, " + format_gate(first))
        decided = measure_until_decided(
            baseline=results["baseline"],
            first=results["prompt-lookup"],
            first_s=took["prompt-lookup"],
            measure=lambda n: run_sync(settings(servers["prompt-lookup"][1], n, warmup=0)),
            measure_baseline=lambda n: run_sync(settings(servers["baseline"][1], n, warmup=0)),
            threshold_pct=args.threshold,
            budget_s=args.noisy_budget,
            log=lambda line: print("  " + line, flush=True),
        )
    finally:
        for proc, _ in servers.values():
            stop_server(proc)
    results = {"baseline": decided.baseline or results["baseline"], "prompt-lookup": decided.result}
    verdict = decided.verdict
    print()
    print(table(results))
    print()
    print(
        f"final verdict after {decided.rounds - 1} more round(s), {decided.added_repeats} more "
        f"repeats each, {decided.spent_s:.0f} s of the {args.noisy_budget:g} s budget "
        f"({decided.stopped}): {headline(verdict)}"
    )
    print("  " + verdict_certainty(verdict))
    for c in verdict.comparisons:
        if c.verdict != PASS:
            print(f"  {c.sentence()}: {c.verdict} — {how_sure(c)}")
    incomplete = [n for n, r in results.items() if r.incomplete]
    if incomplete:
        print(f"INCOMPLETE: {', '.join(incomplete)}")
    out_path = args.json or (
        Path(os.environ["OUT"]) / "bench_real_gpu.json" if os.environ.get("OUT") else None
    )
    if out_path:
        report: dict[str, Any] = {
            "args": vars(args) | {"json": str(args.json) if args.json else None},
            "elapsed_s": time.monotonic() - started,
            "results": {n: r.to_dict() for n, r in results.items()},
            "first_gate": first.to_dict(),
            "gate": verdict.to_dict(),
            "more_repeats": {
                "rounds": decided.rounds,
                "added_repeats": decided.added_repeats,
                "spent_s": decided.spent_s,
                "stopped": decided.stopped,
                "log": decided.log,
            },
        }
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(report, indent=1) + "\n")
        print(f"wrote {out_path}")
    return 1 if incomplete else 0


if __name__ == "__main__":
    sys.exit(main())
