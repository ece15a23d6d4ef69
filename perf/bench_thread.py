"""Run servebench from a deploy job without database calls inside its event loop.

servebench calls `progress` after every request and `should_stop` before each one, from
inside its asyncio loop. The job's versions of both use the database, and Django refuses
ORM calls from a thread with a running event loop (SynchronousOnlyOperation; Django docs,
"Asynchronous support" → "Async safety"). So the benchmark runs in a thread of its own,
and the job's thread (its database connection, its transaction) forwards the newest
progress and the cancel request between polls.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from servebench.runner import Progress, RunSettings, run_sync
from servebench.schema import BenchResult

POLL_S = 0.5  # how soon a cancel reaches the benchmark, and how often progress is written


def run_beside_the_job(
    settings: RunSettings,
    progress: Callable[[Progress], None],
    cancel_requested: Callable[[], bool],
) -> BenchResult:
    """`run_sync` in a thread; `progress` and `cancel_requested` only in this thread."""
    latest: list[Progress] = []
    stop = threading.Event()
    outcome: dict[str, Any] = {}

    def bench() -> None:
        try:
            outcome["result"] = run_sync(settings, latest.append, should_stop=stop.is_set)
        except BaseException as exc:  # re-raised in the job's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=bench, name="servebench", daemon=True)
    thread.start()
    shown = 0
    while thread.is_alive():
        thread.join(POLL_S)
        if len(latest) > shown:
            shown = len(latest)
            progress(latest[-1])
        if not stop.is_set() and cancel_requested():
            stop.set()
    if "error" in outcome:
        raise outcome["error"]
    result: BenchResult = outcome["result"]
    return result
