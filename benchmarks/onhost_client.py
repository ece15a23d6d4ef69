"""The benchmark client on the host (perf.onhost, as the deploy job runs it) against a
client started by hand on the host, and the SSH port forward from the worker for scale:
the same vLLM double on a real systemd + sshd test host, bound to 127.0.0.1, measured the
three ways in turns, in the same run.

Run (as root, like the test hosts): `.venv/bin/python benchmarks/onhost_client.py
[--rounds 3] [--tokens-per-s 74] [--concurrency 32 64]`.

"By hand" is `python3 -m servebench URL … --json` over `ssh` as root, from a copy of
servebench put on the host beforehand; "job" is `perf.onhost.client_on_host` (the copy
sent with the job, run as the unit's User=vllm through setpriv, one command per level,
removed after); "forward" is servebench in this process through
`SSHTransport.forward_local`. Prints TTFT p50, TPOT p50 and output tok/s per concurrency
(median over the rounds), the job's difference from by hand (target: within 2%), and a
last line starting RESULT. Figures taken on a shared machine are noisy: say so.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "specadmin.settings")

from hostops.channel.ssh import SSHTransport  # noqa: E402  (after the path insert)
from hostops.service import VllmService  # noqa: E402
from perf.onhost import client_on_host, package_files  # noqa: E402
from servebench.runner import RunSettings, run_sync  # noqa: E402
from servebench.schema import BenchResult  # noqa: E402
from tests.ports import listening_port  # noqa: E402
from tests.testhost.host import TestHost, boot_hosts  # noqa: E402

FIGURES = ("ttft_p50_ms", "tpot_p50_ms", "output_tok_s")
WAYS = ("by hand", "job", "by hand again", "forward")
BY_HAND_DIR = "/root/servebench-by-hand"
UNIT = "[Service]\nUser=vllm\nExecStart=/usr/local/bin/vllm serve m\n"


def start_double(host: TestHost, tokens_per_s: float) -> int:
    env = {
        "CUDA_VISIBLE_DEVICES": "0",
        "VLLM_DOUBLE_LOAD_S": "0",
        "VLLM_DOUBLE_TTFT_MS": "60",
        "VLLM_DOUBLE_TOKENS_PER_S": str(tokens_per_s),
    }
    argv = ["/usr/local/bin/vllm", "serve", "m", "--host", "127.0.0.1", "--port", "0"]
    setenv = [f"--setenv={k}={v}" for k, v in env.items()]
    host.ssh(["systemd-run", "--unit=vllm-onhost-bench", *setenv, "--", *argv], check=True)
    return listening_port(host, "vllm-onhost-bench", timeout=60)


def figures(result: BenchResult) -> dict[str, float]:
    if result.incomplete:
        raise SystemExit(f"incomplete measurement: {result.error}")
    [level] = result.levels
    return {
        "ttft_p50_ms": level.ttft_ms.median,
        "tpot_p50_ms": level.tpot_ms.median,
        "output_tok_s": level.output_throughput,
    }


def by_hand(host: TestHost, settings: RunSettings) -> dict[str, float]:
    argv = [
        "/usr/bin/python3", "-m", "servebench", settings.url, "--prompts", settings.prompts,
        "--max-tokens", str(settings.max_tokens), "--concurrency", str(settings.concurrency[0]),
        "--requests", str(settings.num_requests), "--warmup", str(settings.warmup),
        "--json", "--quiet",
    ]  # fmt: skip
    done = host.ssh(["sh", "-c", f'cd {BY_HAND_DIR} && exec "$@"', "sh", *argv])
    if done.returncode not in (0, 1) or not done.stdout.strip():  # 1: measured, incomplete
        raise SystemExit(f"the client by hand exited {done.returncode}: {done.stderr[-800:]}")
    return figures(BenchResult.from_dict(json.loads(done.stdout)))


def install_by_hand(host: TestHost) -> None:
    for name, data in package_files().items():
        host.write_file(f"{BY_HAND_DIR}/{name}", data.decode())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens-per-s", type=float, default=74.0, help="per stream")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 64])
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args(argv)
    [host] = boot_hosts(1, gpu_count=1)
    worst = 0.0
    try:
        port = start_double(host, args.tokens_per_s)
        install_by_hand(host)
        service = VllmService(
            argv=("/usr/local/bin/vllm", "serve", "m", "--host", "127.0.0.1", "--port", str(port)),
            style="serve",
            args_start=2,
            model="m",
            served_model_name="m",
            address="127.0.0.1",
            port=port,
        )
        transport = SSHTransport(
            host.host, host.port, host.user, pinned_host_key=host.host_key,
            key_filename=host.key_path,
        )  # fmt: skip
        with transport, client_on_host(transport, service, UNIT) as client:
            print(f"client on the host as {client.user}: {client.python} ({client.versions})")
            for concurrency in args.concurrency:
                settings = RunSettings(
                    url=service.base_url,
                    prompts="chat",
                    max_tokens=args.max_tokens,
                    concurrency=[concurrency],
                    num_requests=2 * concurrency,
                    warmup=1,
                )
                rows: dict[str, list[dict[str, float]]] = {way: [] for way in WAYS}
                ways = {
                    "by hand": lambda s=settings: by_hand(host, s),
                    "job": lambda s=settings: figures(client.measure(s)),
                    "by hand again": lambda s=settings: by_hand(host, s),
                }
                for round_ in range(args.rounds):
                    # each of the three goes first in turn: nothing gains from its place
                    names = list(ways)
                    for name in names[round_ % 3 :] + names[: round_ % 3]:
                        rows[name].append(ways[name]())
                    with transport.forward_local("127.0.0.1", port) as (address, local):
                        forwarded = RunSettings(
                            **{**settings.__dict__, "url": f"http://{address}:{local}"}
                        )
                        rows["forward"].append(figures(run_sync(forwarded)))
                worst = max(worst, report(concurrency, rows))
    finally:
        host.stop()
    verdict = "within" if worst <= 2.0 else "NOT within"
    print(
        f"RESULT the job's client on the host is {verdict} 2% of a client started by hand "
        f"(largest difference {worst:.1f}%)"
    )
    return 0


def report(concurrency: int, rows: dict[str, list[dict[str, float]]]) -> float:
    """Print one concurrency's medians; the largest |job - by hand| in percent."""
    medians = {
        way: {f: statistics.median(r[f] for r in runs) for f in FIGURES}
        for way, runs in rows.items()
    }
    print(f"{concurrency} streams (median of {len(rows['job'])} rounds)")
    worst = 0.0
    for figure in FIGURES:
        hand, job, again, fwd = (medians[way][figure] for way in WAYS)
        job_pct = (job - hand) / hand * 100 if hand else 0.0
        again_pct = (again - hand) / hand * 100 if hand else 0.0
        fwd_pct = (fwd - hand) / hand * 100 if hand else 0.0
        worst = max(worst, abs(job_pct))
        print(
            f"  {figure:13} by hand {hand:9.2f}   job {job:9.2f} ({job_pct:+.1f}%)   "
            f"by hand again {again:9.2f} ({again_pct:+.1f}%: the noise floor)   "
            f"forward {fwd:9.2f} ({fwd_pct:+.1f}%)"
        )
    return worst


if __name__ == "__main__":
    raise SystemExit(main())
