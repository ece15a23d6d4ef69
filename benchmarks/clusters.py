"""Stopping a `qcluster` a benchmark started in its own session: SIGTERM (the cluster stops
its own workers; signalling them breaks that), then SIGKILL to the group if it hangs."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess


def stop_cluster(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
