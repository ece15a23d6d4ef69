"""Restart benchmark: the deploy job's restart path against the seed's way, on the GPU and
vLLM doubles of a real systemd + sshd test host, both measured in the same run.

Run (as root, like the test hosts): `.venv/bin/python benchmarks/restart.py [--runs 5]`.

Prints three figures:
1. "last GPU process gone" → "all GPUs verified clean" (target < 1 s): specadmin's GPU-clean
   step on a `VLLM::EngineCore` that escaped its unit (its own report: the moment its
   host-side wait saw the last PID exit, and the moment the GPUs read clean), against the
   seed's fixed `sleep 5 … sleep 3 … sleep 2` between killing and checking, run over the
   same SSH connection on the same host.
2. start → fatal config error detected (target < 10 s): a speculative config only the
   engine rejects (the host's vLLM is a wrapper, so the vLLM check skips); specadmin's
   journal check against the seed's readiness-only wait (`/health` every 5 s until its
   budget, 30 s here), which cannot tell a config error from a slow load.
3. overhead beyond the service's own stop and load time (target < 5 s): a whole restart
   job (lock, preflight, vLLM check, stop, GPU-clean, start, journal, readiness, reading
   the host back) minus the time `systemctl stop` took and the time from the start to the
   server's "Application startup complete"; against the seed's restart script (stop, its
   three sleeps with nvidia-smi checks, start, /health every 5 s), measured the same way.

Figures taken on a shared or busy machine are noisy: say so when you report them. Only
loopback; every wait is bounded.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

import django
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.testhost.host import boot_hosts  # noqa: E402  (after the path insert)


def setup_django(database: Path) -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="specadmin.settings",
        DATABASE_URL=f"sqlite:///{database}",
        SECRET_KEY=os.environ.get("SECRET_KEY", "restart-benchmark-only"),
        REDIS_URL="",
        Q_TIMEOUT="3600",
        Q_RETRY="3700",
    )
    django.setup()
    call_command("migrate", verbosity=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="repetitions of each figure")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="restart-bench-") as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        # The figures use the models, which need the settings just chosen.
        from benchmarks.restart_figures import run  # noqa: PLC0415 (after django.setup())

        [host] = boot_hosts(1, gpu_count=8)
        try:
            return run(host, args.runs)
        finally:
            host.stop()


if __name__ == "__main__":
    sys.exit(main())
