"""Lint throughput: `lintunits` against `systemd-analyze verify` on the same generated units.

Prints figures, asserts nothing. Run: `.venv/bin/python benchmarks/lint_throughput.py
[--units 1000]`. The corpus is 1,000+ vLLM-style units, each with a distinct `bash -c`
pre-start script (so ShellCheck's cache cannot hide the work), written to a temp dir.

Peers measured in the same run:
- `systemd-analyze verify FILE`, one process per file (how a CI loop over changed units
  calls it), timed on a sample and extrapolated;
- `systemd-analyze verify FILE…`, all files in one process.
Also: one small file through `python manage.py lintunits` (wall time, best of 5).
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCRIPTS = [
    "for i in $$(seq 1 {n}); do used=$$(nvidia-smi --query-gpu=memory.used "
    '--format=csv,noheader,nounits | sort -n | tail -1); [ "$$used" -lt {mem} ] && exit 0; '
    "sleep {s}; done; exit 1",
    "pids=$$(nvidia-smi --query-compute-apps=pid --format=csv,noheader); "
    '[ -z "$$pids" ] || kill -TERM $$pids; sleep {s}; test $$(nvidia-smi '
    "--query-compute-apps=pid --format=csv,noheader | wc -l) -eq 0 || exit {n}",
    "for gpu in {gpus}; do m=$$(nvidia-smi -i $$gpu --query-gpu=memory.used "
    '--format=csv,noheader,nounits); if [ "$$m" -gt {mem} ]; then echo "gpu $$gpu busy"; '
    "exit 1; fi; done",
]


def make_unit(i: int, rng: random.Random) -> str:
    tp = rng.choice([1, 2, 4, 8])
    gpus = ",".join(str(g) for g in range(tp))
    script = rng.choice(SCRIPTS).format(
        n=rng.randint(5, 120),
        mem=rng.randint(100, 4000),
        s=rng.randint(1, 10),
        gpus=" ".join(gpus.split(",")),
    )
    spec = (
        f'\'{{"method": "ngram", "num_speculative_tokens": {rng.randint(1, 8)}, '
        f'"prompt_lookup_max": {rng.randint(1, 6)}}}\''
    )
    return f"""[Unit]
Description=vLLM service {i}
After=network-online.target

[Service]
Type=exec
User=vllm
Environment=CUDA_VISIBLE_DEVICES={gpus}
TimeoutStartSec=45min
TimeoutStopSec=120s
Restart=on-failure
RestartSec=30s
ExecStartPre=/bin/bash -c '{script}'
ExecStart=/opt/vllm/.venv/bin/vllm serve /models/model-{i} \\
    --served-model-name model-{i} --tensor-parallel-size {tp} \\
    --gpu-memory-utilization 0.{rng.randint(80, 95)} \\
    --max-model-len {rng.choice(["32k", "65536"])} \\
    --speculative-config {spec} --port {8000 + i}

[Install]
WantedBy=multi-user.target
"""


def timed(argv: list[str], **kwargs: object) -> float:
    start = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=False, **kwargs)  # type: ignore[call-overload]
    return time.perf_counter() - start


def shellcheck_seconds(files: list[str]) -> float:
    """ShellCheck's own time on the scripts of `files`, as the linter batches it (cache
    off): the floor under a cold `lintunits` run with ShellCheck on."""
    os.environ["LINTUNITS_CACHE_DIR"] = "off"
    from linting.context import UnitContext, shell_script
    from linting.options import LintOptions
    from linting.shell.shellcheck import ShellScript, check_scripts, clear_cache
    from linting.unitfile import parse_file

    scripts = []
    for path in files:
        ctx = UnitContext(parse_file(Path(path)), LintOptions())
        for cmd in ctx.commands:
            found = shell_script(cmd)
            if found:
                scripts.append(
                    ShellScript(found[1].value, found[0].dialect, tuple(ctx.environment))
                )
    clear_cache()
    start = time.perf_counter()
    check_scripts(scripts)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--sample", type=int, default=50, help="per-file peer sample size")
    args = parser.parse_args()
    rng = random.Random(42)
    workdir = Path(tempfile.mkdtemp(prefix="lint-bench-", dir="/var/tmp"))
    try:
        files = []
        for i in range(args.units):
            path = workdir / f"vllm-{i:05d}.service"
            path.write_text(make_unit(i, rng))
            files.append(str(path))
        py = sys.executable
        lint_cli = [py, "-m", "linting", "--format", "json", "--fail-on", "error"]
        results: dict[str, float] = {}
        cache = {"LINTUNITS_CACHE_DIR": str(workdir / ".cache"), "PATH": os.environ["PATH"]}
        results["lintunits (one process, ShellCheck on)"] = timed(
            [*lint_cli, str(workdir)], cwd=ROOT, env=cache
        )
        results["lintunits (same, ShellCheck cache warm)"] = timed(
            [*lint_cli, str(workdir)], cwd=ROOT, env=cache
        )
        results["lintunits (one process, --no-shellcheck)"] = timed(
            [*lint_cli, "--no-shellcheck", str(workdir)], cwd=ROOT
        )
        shellcheck_alone = shellcheck_seconds(files)
        analyze = shutil.which("systemd-analyze")
        peer_per_file = peer_batch = None
        if analyze:
            sample = files[: args.sample]
            per = [timed([analyze, "verify", f]) for f in sample]
            peer_per_file = statistics.mean(per) * len(files)
            peer_batch = timed([analyze, "verify", *files])
        print(f"corpus: {len(files)} generated vLLM units with distinct bash -c pre-start scripts")
        for name, seconds in results.items():
            print(f"{name:45s} {seconds:7.2f} s  {len(files) / seconds:8.1f} files/s")
        print(
            f"{'(ShellCheck alone on the same scripts)':45s} {shellcheck_alone:7.2f} s  "
            f"{len(files) / shellcheck_alone:8.1f} files/s  (its own cost, for reference)"
        )
        if peer_per_file is not None and peer_batch is not None:
            print(
                f"{'systemd-analyze verify, one process per file':45s} {peer_per_file:7.2f} s  "
                f"{len(files) / peer_per_file:8.1f} files/s  (mean of {args.sample}, extrapolated)"
            )
            print(
                f"{'systemd-analyze verify, all files at once':45s} {peer_batch:7.2f} s  "
                f"{len(files) / peer_batch:8.1f} files/s"
            )
            ours = results["lintunits (one process, ShellCheck on)"]
            print(f"ratio lintunits / systemd-analyze per file: {peer_per_file / ours:6.1f}x")
            print(f"ratio lintunits / systemd-analyze batched:  {peer_batch / ours:6.2f}x")
            warm = results["lintunits (same, ShellCheck cache warm)"]
            print(f"ratio with a warm ShellCheck cache, per file: {peer_per_file / warm:6.1f}x")
        small = workdir / "vllm-00000.service"
        walls = [timed([py, "manage.py", "lintunits", str(small)], cwd=ROOT) for _ in range(5)]
        print(
            f"one small file via manage.py lintunits: best {min(walls):.3f} s, "
            f"median {statistics.median(walls):.3f} s (target < 0.5 s)"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
