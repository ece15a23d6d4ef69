"""Lint throughput: `lintunits` against its peers on the same generated units, in one run.

Prints figures, asserts nothing (targets live here, never in tests). Run:

    .venv/bin/python benchmarks/lint_throughput.py [--units 1000] [--rounds 3] [--profile]

The corpus is 1,000 vLLM-style units, each with a distinct `bash -c` pre-start script (so
ShellCheck's cache cannot hide the work), written to a temp dir. Every figure is the median
of `--rounds` rounds that take turns (cold, ShellCheck alone, verify, …, then again), so a
busy machine slows all of them alike; CPU seconds (user + system of the processes) are
printed beside the wall time because they hardly depend on what else the machine runs.

Measured in the same run:
- lintunits cold (an empty ShellCheck cache), warm (the cache filled), `--no-shellcheck`;
- ShellCheck alone on the same scripts, one process per core on equal shares, exactly the
  files lintunits hands it (directive and `export` lines included): the floor of a cold run;
- `systemd-analyze verify FILE`, one process per file (how a CI loop over changed units
  calls it), timed on a sample and extrapolated; and all files in one process;
- one small file through `python manage.py lintunits` (best and median of 5).
Targets: cold ≤ 1.3 × ShellCheck alone (in CPU seconds too); warm ≥ 40 × faster than
verify per file; cold ≥ 20 × faster than verify per file;
`--no-shellcheck` within 2 × verify given all files at once. `--profile` adds where the
time of a cold run goes (cProfile, grouped by module).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout without installing it
    sys.path.insert(0, str(ROOT))

from linting.context import UnitContext  # noqa: E402
from linting.engine import lint_paths  # noqa: E402
from linting.gc_tuning import collector_paused  # noqa: E402
from linting.options import LintOptions  # noqa: E402
from linting.shell.shellcheck import find_shellcheck, shellcheck_input, usable_cpus  # noqa: E402
from linting.unitfile import parse_file  # noqa: E402

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


class Timing:
    """Wall and CPU seconds of child processes started by `action`."""

    def __init__(self) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []

    def measure(self, action: Callable[[], object]) -> None:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        action()
        self.walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def run_quietly(argv: list[str], **kwargs: object) -> None:
    subprocess.run(argv, capture_output=True, check=False, **kwargs)  # type: ignore[call-overload]


def shellcheck_files(files: list[str], into: Path) -> list[str]:
    """The files lintunits hands ShellCheck for these units (same directive and `export`
    lines), written to `into`; returns their names."""
    names = []
    for path in files:
        ctx = UnitContext(parse_file(Path(path)), LintOptions())
        for _cmd, script in ctx.shell_scripts:
            name = f"{len(names)}.sh"
            (into / name).write_text(shellcheck_input(script), encoding="utf-8")
            names.append(name)
    return names


def shellcheck_alone(names: list[str], directory: Path, processes: int) -> None:
    """ShellCheck by itself on every core: `processes` invocations on equal shares."""
    binary = find_shellcheck()
    share = -(-len(names) // processes)
    argv = [binary, "--format=json1", "--norc"]
    running = [
        subprocess.Popen([*argv, *names[i : i + share]], cwd=directory, stdout=subprocess.DEVNULL)
        for i in range(0, len(names), share)
    ]
    for process in running:
        process.wait()


def profile_cold_run(directory: Path) -> None:
    """Where a cold run's time goes in this process, grouped by module (ShellCheck's own
    time shows as the wait for its results)."""
    os.environ["LINTUNITS_CACHE_DIR"] = "off"
    profiler = cProfile.Profile()
    start = time.perf_counter()
    with collector_paused():  # as the command line runs it
        profiler.runcall(lint_paths, [str(directory)], LintOptions())
    wall = time.perf_counter() - start
    stats = pstats.Stats(profiler)
    by_module: dict[str, float] = defaultdict(float)
    for (filename, _line, func), (_cc, _nc, tottime, _ct, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        # The main thread blocked on a lock is waiting for a ShellCheck batch, not working.
        waiting = "acquire' of '_thread.lock" in func
        by_module["waiting for ShellCheck" if waiting else _module_name(filename)] += tottime
    total = sum(by_module.values())
    print(f"\nprofile of one cold run in-process (cProfile, {wall:.2f} s wall with profiling):")
    for name, seconds in sorted(by_module.items(), key=lambda kv: -kv[1])[:18]:
        print(f"  {seconds:6.2f} s  {100 * seconds / total:5.1f} %  {name}")


def _module_name(filename: str) -> str:
    path = Path(filename)
    if ROOT in path.parents:
        return str(path.relative_to(ROOT))
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (" + filename.strip("~<>") + ")" if filename != "~" else "builtins"
    return f"stdlib {path.name}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sample", type=int, default=20, help="verify per-file sample/round")
    parser.add_argument("--profile", action="store_true", help="add a cProfile summary")
    args = parser.parse_args()
    rng = random.Random(42)
    workdir = Path(tempfile.mkdtemp(prefix="lint-bench-", dir="/var/tmp"))
    cores = usable_cpus()  # what `taskset` left us, as lintunits counts them
    try:
        units = workdir / "units"
        units.mkdir()
        files = []
        for i in range(args.units):
            path = units / f"vllm-{i:05d}.service"
            path.write_text(make_unit(i, rng))
            files.append(str(path))
        scripts = workdir / "scripts"
        scripts.mkdir()
        names = shellcheck_files(files, scripts)
        lint = [sys.executable, "-m", "linting", "--format", "json", "--fail-on", "error"]
        env = {"PATH": os.environ["PATH"]}
        analyze = shutil.which("systemd-analyze")
        timings: dict[str, Timing] = defaultdict(Timing)
        load_before = os.getloadavg()
        for round_ in range(args.rounds):
            cache = workdir / f"cache-{round_}"

            def with_cache(cache: Path = cache) -> None:
                run_quietly([*lint, str(units)], env={**env, "LINTUNITS_CACHE_DIR": str(cache)})

            timings["cold"].measure(with_cache)  # the cache directory starts empty
            timings["alone"].measure(lambda: shellcheck_alone(names, scripts, cores))
            timings["warm"].measure(with_cache)  # now filled by the cold run
            timings["python"].measure(
                lambda: run_quietly(
                    [*lint, "--no-shellcheck", str(units)],
                    env={**env, "LINTUNITS_CACHE_DIR": "off"},
                )
            )
            if analyze:
                timings["verify-all"].measure(lambda: run_quietly([analyze, "verify", *files]))
                sample = rng.sample(files, min(args.sample, len(files)))
                per_file = Timing()
                for path in sample:
                    per_file.measure(lambda path=path: run_quietly([analyze, "verify", path]))
                timings["verify-each"].walls.append(sum(per_file.walls) / len(sample) * len(files))
                timings["verify-each"].cpus.append(sum(per_file.cpus) / len(sample) * len(files))
        load_after = os.getloadavg()
        report(args, timings, len(names), cores, load_before, load_after, analyze is not None)
        small = units / "vllm-00000.service"
        walls = Timing()
        for _ in range(5):
            walls.measure(
                lambda: run_quietly(
                    [sys.executable, "manage.py", "lintunits", str(small)], cwd=ROOT
                )
            )
        print(
            f"one small file via manage.py lintunits: best {min(walls.walls):.3f} s, "
            f"median {walls.wall:.3f} s (target < 0.5 s)"
        )
        if args.profile:
            profile_cold_run(units)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(
    args: argparse.Namespace,
    timings: dict[str, Timing],
    scripts: int,
    cores: int,
    load_before: tuple[float, float, float],
    load_after: tuple[float, float, float],
    verify: bool,
) -> None:
    n = args.units
    print(
        f"corpus: {n} generated vLLM units, {scripts} distinct bash -c scripts; {cores} cores; "
        f"median of {args.rounds} interleaved rounds; load average {load_before[0]:.1f} before, "
        f"{load_after[0]:.1f} after (a shared machine: compare ratios, not seconds)"
    )
    rows = [
        ("cold", "lintunits, cold (empty ShellCheck cache)"),
        ("alone", f"ShellCheck alone, {cores} processes on the same scripts"),
        ("warm", "lintunits, warm (ShellCheck cache filled)"),
        ("python", "lintunits --no-shellcheck (the Python rules)"),
    ]
    if verify:
        rows += [
            ("verify-each", "systemd-analyze verify, one process per file"),
            ("verify-all", "systemd-analyze verify, all files at once"),
        ]
    print(f"{'':52s} {'wall':>8s} {'cpu':>8s} {'files/s':>9s}")
    for key, label in rows:
        t = timings[key]
        note = f"  (sample of {args.sample}/round, extrapolated)" if key == "verify-each" else ""
        print(f"{label:52s} {t.wall:7.2f}s {t.cpu:7.2f}s {n / t.wall:9.1f}{note}")
    cold, alone, python = timings["cold"].wall, timings["alone"].wall, timings["python"].wall
    print(f"cold / ShellCheck alone:                 {cold / alone:6.2f}x  (target <= 1.3x)")
    # CPU seconds hardly depend on the other work of a shared machine: on a busy one, where
    # no core is ever idle, the wall-time ratio tends to this one.
    cpu_ratio = timings["cold"].cpu / timings["alone"].cpu
    print(f"  in CPU seconds:                        {cpu_ratio:6.2f}x")
    if verify:
        each, every = timings["verify-each"].wall, timings["verify-all"].wall
        print(f"verify per file / cold:                  {each / cold:6.1f}x  (target >= 20x)")
        print(f"  (ShellCheck alone bounds it at          {each / alone:6.1f}x on this machine)")
        warm = timings["warm"]
        print(f"verify per file / warm:                  {each / warm.wall:6.1f}x  (target >= 40x)")
        cpu_warm = timings["verify-each"].cpu / warm.cpu
        print(f"  in CPU seconds:                        {cpu_warm:6.1f}x")
        print(f"--no-shellcheck / verify all at once:    {python / every:6.2f}x  (target <= 2x)")
        cpu_python = timings["python"].cpu / timings["verify-all"].cpu
        print(f"  in CPU seconds:                        {cpu_python:6.2f}x")


if __name__ == "__main__":
    main()
