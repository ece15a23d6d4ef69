"""What a transport did: every command, file read/write and D-Bus/NVML call, with its
exit code and duration.

Every `Transport` keeps a `CommandLog`; the job runner takes it after each step and
stores it on the step's row, so a step's record of "what ran on the host" is complete
without the step doing anything. A readiness wait may poll for 45 minutes: the JSON form
keeps the first records in full and folds the rest into one line per distinct command
(count, exit codes, total and longest duration), so nothing is dropped and nothing grows
without bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

# Kinds of records: a command (`run`), SFTP/local file access, systemd over D-Bus (local
# transport), NVML queries (local transport), connecting (SSH), and port forwards over SSH
# (one record per forward: its lifetime, the bytes back from the host, refused connections).
RUN = "run"
READ = "read"
WRITE = "write"  # a file staged beside its target, confirmed and read back
RENAME = "rename"  # a staged file renamed over its target
REMOVE = "remove"
DBUS = "dbus"
NVML = "nvml"
CONNECT = "connect"
FORWARD = "forward"

FULL_RECORDS = 150  # per step, kept one by one; the rest are folded per command
STDERR_TAIL = 300


@dataclass(frozen=True)
class CommandRecord:
    """One thing done on the host. `exit_code` None: it raised (`error` says what)."""

    kind: str
    argv: tuple[str, ...]
    exit_code: int | None
    duration: float
    started: float  # time.time() when it started
    error: str = ""
    bound_s: float | None = None  # host-side bound (`timeout(1)`), SSH commands
    stdout_bytes: int = 0
    stderr_tail: str = ""
    dropped_bytes: int = 0  # output over the per-stream caps (`bounds`), not kept
    note: str = ""  # what a write read back on the host

    def as_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": self.kind,
            "argv": list(self.argv),
            "exit": self.exit_code,
            "s": round(self.duration, 4),
            "at": round(self.started, 3),
        }
        if self.error:
            data["error"] = self.error
        if self.bound_s is not None:
            data["bound_s"] = self.bound_s
        if self.stdout_bytes:
            data["out_bytes"] = self.stdout_bytes
        if self.stderr_tail:
            data["stderr"] = self.stderr_tail
        if self.dropped_bytes:
            data["dropped_bytes"] = self.dropped_bytes
        if self.note:
            data["note"] = self.note
        return data

    @property
    def key(self) -> tuple[str, tuple[str, ...]]:
        return (self.kind, self.argv)


@dataclass
class CommandLog:
    """Thread-safe list of records; `take()` hands them over and starts afresh."""

    _records: list[CommandRecord] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, record: CommandRecord) -> None:
        with self._lock:
            self._records.append(record)

    def take(self) -> list[CommandRecord]:
        with self._lock:
            records, self._records = self._records, []
        return records

    def peek(self) -> list[CommandRecord]:
        with self._lock:
            return list(self._records)

    @contextmanager
    def recording(
        self, kind: str, argv: Sequence[str], *, bound_s: float | None = None
    ) -> Iterator[dict[str, Any]]:
        """Record the block as one entry; the block may set `exit_code`/`stdout_bytes`/
        `stderr` in the yielded dict. An exception is recorded (and re-raised)."""
        started_wall, started = time.time(), time.monotonic()
        outcome: dict[str, Any] = {"exit_code": 0}
        try:
            yield outcome
        except BaseException as exc:
            self.add(
                CommandRecord(
                    kind,
                    tuple(str(a) for a in argv),
                    None,
                    time.monotonic() - started,
                    started_wall,
                    error=f"{type(exc).__name__}: {exc}"[:500],
                    bound_s=bound_s,
                )
            )
            raise
        self.add(
            CommandRecord(
                kind,
                tuple(str(a) for a in argv),
                outcome.get("exit_code"),
                time.monotonic() - started,
                started_wall,
                bound_s=bound_s,
                stdout_bytes=int(outcome.get("stdout_bytes") or 0),
                stderr_tail=str(outcome.get("stderr") or "")[-STDERR_TAIL:],
                dropped_bytes=int(outcome.get("dropped_bytes") or 0),
                note=str(outcome.get("note") or "")[:STDERR_TAIL],
            )
        )


def records_json(records: Sequence[CommandRecord], *, full: int = FULL_RECORDS) -> dict[str, Any]:
    """`{"count", "total_s", "records": [...], "folded": [...]}`: the first `full` records
    one by one, every later one counted under its command (nothing is dropped)."""
    kept = [r.as_json() for r in records[:full]]
    folded: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
    for r in records[full:]:
        entry = folded.setdefault(
            r.key,
            {
                "kind": r.kind,
                "argv": list(r.argv),
                "count": 0,
                "exits": {},
                "total_s": 0.0,
                "max_s": 0.0,
                "first_at": round(r.started, 3),
            },
        )
        entry["count"] += 1
        code = "raised" if r.exit_code is None else str(r.exit_code)
        entry["exits"][code] = entry["exits"].get(code, 0) + 1
        entry["total_s"] = round(entry["total_s"] + r.duration, 4)
        entry["max_s"] = round(max(entry["max_s"], r.duration), 4)
        entry["last_at"] = round(r.started, 3)
    return {
        "count": len(records),
        "total_s": round(sum(r.duration for r in records), 4),
        "records": kept,
        "folded": list(folded.values()),
    }


__all__ = [
    "CONNECT",
    "DBUS",
    "FORWARD",
    "NVML",
    "READ",
    "REMOVE",
    "RENAME",
    "RUN",
    "WRITE",
    "CommandLog",
    "CommandRecord",
    "records_json",
]
