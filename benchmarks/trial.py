"""Trial benchmark: the seed's experiment as one trial on a real systemd + sshd test host
with the GPU and vLLM doubles, against the seed's way measured in the same run.

Run (as root, like the test hosts): `.venv/bin/python benchmarks/trial.py`.

Production runs the double at the seed's 74 tok/s per stream; the trial tries three
candidates in place of it, each as its own unit: the seed's n-gram config
(`{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}`) and two more
sweep points (k=3, k=8). The double's defaults make speculation slower, as the seed found
(docs/sweeps.md). Printed: each candidate's verdict against production's baseline,
production's speed after it was put back, and the pipeline's overhead per candidate
beyond its stop, load and benchmark (target ≤ 5 s); then the seed's restart script
(stop, fixed sleeps with nvidia-smi, start, /health every 5 s) measured the same way on
the same host, and what a candidate costs the seed's way (that script twice: the
candidate in, production back). Last line starts with RESULT.

Figures taken on a shared or busy machine are noisy: say so when you report them.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.restart import setup_django  # noqa: E402  (after the path insert)
from tests.testhost.host import boot_hosts  # noqa: E402


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="trial-bench-") as tmp:
        setup_django(Path(tmp) / "bench.sqlite3")
        # The figures use the models, which need the settings just chosen.
        from benchmarks.trial_figures import run  # noqa: PLC0415 (after django.setup())

        [host] = boot_hosts(1, gpu_count=8)
        try:
            return run(host)
        finally:
            host.stop()


if __name__ == "__main__":
    sys.exit(main())
