"""TEST DOUBLE for `vllm serve`: knobs changed while the server runs, through a JSON file.

The double's other knobs are read once at start; a watchdog test needs a running server
whose engine stops making progress, or whose drafts stop being accepted, without a
restart (a restart resets the counters the checks read). The file named by the knob
`control_file` (VLLM_DOUBLE_CONTROL_FILE) is re-read when it changes:

    {"freeze": true}            no token leaves (streams and counters stand still) while
                                /health and /metrics keep answering (vLLM issues #39863,
                                #51663: a hung engine behind a healthy API server)
    {"acceptance_rate": 0.05}   requests planned from now on accept this share of drafts

A missing or unreadable file means no override. Stdlib only.
"""

from __future__ import annotations

import json
import os
import threading
import time
from typing import Any

RECHECK_S = 0.05  # how often the file's mtime is looked at, at most
FROZEN_POLL_S = 0.05


class LiveControl:
    """The control file's current values (cached by mtime, re-stat at most every RECHECK_S)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._values: dict[str, Any] = {}
        self._checked = 0.0

    def values(self) -> dict[str, Any]:
        if not self.path:
            return {}
        with self._lock:
            now = time.monotonic()
            if now - self._checked < RECHECK_S:
                return self._values
            self._checked = now
            try:
                st = os.stat(self.path)
            except OSError:
                self._stamp, self._values = None, {}
                return self._values
            stamp = (st.st_mtime_ns, st.st_size)
            if stamp != self._stamp:
                self._stamp = stamp
                self._values = _read(self.path)
            return self._values

    def frozen(self) -> bool:
        return bool(self.values().get("freeze"))

    def acceptance_rate(self, default: float) -> float:
        value = self.values().get("acceptance_rate")
        return float(value) if isinstance(value, (int, float)) else default

    def wait_while_frozen(self) -> None:
        """Block the calling request while the engine is frozen."""
        while self.frozen():
            time.sleep(FROZEN_POLL_S)


def _read(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


__all__ = ["LiveControl"]
