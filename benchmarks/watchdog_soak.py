"""Watchdog soak: a healthy, busy host watched for a long while must give no incident.

Run (as root, like the test hosts): `.venv/bin/python benchmarks/watchdog_soak.py`
(`--minutes 30` by default, `--period 30`).

A real systemd + sshd test host with the GPU and vLLM doubles runs the seed's n-gram unit
(`--speculative-config '{"method": "ngram", "num_speculative_tokens": 5,
"prompt_lookup_max": 4}'`), deployed by an approved request whose benchmark records the
acceptance rate the watchdog compares live traffic with (docs/watchdog.md). Clients on
the host keep it busy (streamed completions, two at a time) for the whole soak, while the
watchdog checks it once per period over real SSH, as a worker does (claim, check, finish).
Printed: every check's duration and what it read (state, requests running, tokens, the
live acceptance rate), then the incidents opened (the target is none). Last line starts
with RESULT.

Figures taken on a shared or busy machine are noisy: say so when you report them.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.restart import setup_django  # noqa: E402  (after the path insert)
from tests.testhost.host import boot_hosts  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30, help="how long to watch")
    parser.add_argument("--period", type=float, default=30, help="seconds between checks")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="watchdog-soak-") as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        # The figures use the models, which need the settings just chosen.
        from benchmarks.watchdog_soak_figures import run  # noqa: PLC0415 (after django.setup())

        [host] = boot_hosts(1, gpu_count=8)
        try:
            return run(host, minutes=args.minutes, period_s=args.period)
        finally:
            host.stop()


if __name__ == "__main__":
    sys.exit(main())
