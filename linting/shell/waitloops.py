"""Estimate the worst-case run time of wait loops in shell scripts.

Good enough for the loops people write in ExecStartPre= (`for i in $(seq 1 60); do …;
sleep 5; done`, `for i in {1..60}`, C-style `for ((…))`, `while`/`until` with a counter
test): iterations × the sleeps in the body, plus top-level sleeps. A `while`/`until` loop
without a counter bound is reported as unbounded. It under-estimates (commands take time
too), so a finding is certain when the estimate already exceeds the timeout.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SLEEP = re.compile(r"(?<![\w-])sleep\s+(\d+(?:\.\d+)?)([smhd]?)\b")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_FOR_SEQ = re.compile(r"\bfor\s+\w+\s+in\s+\$\(\s*seq\s+(?:(-?\d+)\s+)?(?:(-?\d+)\s+)?(-?\d+)\s*\)")
_FOR_BRACE = re.compile(r"\bfor\s+\w+\s+in\s+\{(-?\d+)\.\.(-?\d+)\}")
_FOR_LIST = re.compile(r"\bfor\s+\w+\s+in\s+((?:\d+\s+)+)(?:;|\n)\s*do\b")
_FOR_C = re.compile(r"\bfor\s*\(\(\s*\w+\s*=\s*(-?\d+)\s*;\s*\w+\s*(<=|<)\s*(-?\d+)\s*;[^)]*\)\)")
_WHILE = re.compile(r"\b(while|until)\b(.*?)\bdo\b", re.S)
_BOUND = re.compile(r"(?:-lt|-le|-gt|-ge|-eq|<=|>=|<|>)\s*\"?(\d+)\"?")
_TIMEOUT = re.compile(r"(?<![\w-])timeout\s+(?:-\w+\s+\S+\s+)*(\d+(?:\.\d+)?)([smhd]?)\b")


@dataclass(frozen=True)
class LoopEstimate:
    kind: str  # "for" | "while" | "until"
    start: int  # offset of the loop keyword in the script
    end: int  # offset after its `done`
    iterations: int | None  # None: unbounded
    sleep_per_iteration: float

    @property
    def worst_case(self) -> float | None:
        if self.iterations is None:
            return None
        return self.iterations * self.sleep_per_iteration


def sleep_seconds(text: str) -> float:
    return sum(float(m.group(1)) * _UNITS[m.group(2)] for m in _SLEEP.finditer(text))


def _matching_done(script: str, do_end: int) -> int:
    """Offset just after the `done` that closes the `do` ending at `do_end`."""
    depth = 1
    for m in re.finditer(r"\b(do|done)\b", script[do_end:]):
        depth += 1 if m.group(1) == "do" else -1
        if depth == 0:
            return do_end + m.end()
    return len(script)


def _body(script: str, start: int) -> tuple[str, int, int]:
    m = re.compile(r"\bdo\b").search(script, start)
    if m is None:
        return "", start, len(script)
    end = _matching_done(script, m.end())
    return script[m.end() : end], m.end(), end


def _seq_count(groups: tuple[str | None, ...]) -> int:
    numbers = [int(g) for g in groups if g is not None]
    if len(numbers) == 1:
        first, step, last = 1, 1, numbers[0]
    elif len(numbers) == 2:
        first, step, last = numbers[0], 1, numbers[1]
    else:
        first, step, last = numbers
    if step == 0:
        return 0
    return max(0, (last - first) // step + 1)


def estimate_loops(script: str) -> list[LoopEstimate]:
    loops: list[LoopEstimate] = []
    for m in _FOR_SEQ.finditer(script):
        body, _, end = _body(script, m.end())
        loops.append(
            LoopEstimate("for", m.start(), end, _seq_count(m.groups()), sleep_seconds(body))
        )
    for m in _FOR_BRACE.finditer(script):
        body, _, end = _body(script, m.end())
        count = abs(int(m.group(2)) - int(m.group(1))) + 1
        loops.append(LoopEstimate("for", m.start(), end, count, sleep_seconds(body)))
    for m in _FOR_LIST.finditer(script):
        body, _, end = _body(script, m.start())
        count = len(m.group(1).split())
        loops.append(LoopEstimate("for", m.start(), end, count, sleep_seconds(body)))
    for m in _FOR_C.finditer(script):
        body, _, end = _body(script, m.end())
        first, op, last = int(m.group(1)), m.group(2), int(m.group(3))
        count = max(0, last - first + (1 if op == "<=" else 0))
        loops.append(LoopEstimate("for", m.start(), end, count, sleep_seconds(body)))
    for m in _WHILE.finditer(script):
        if any(loop.start <= m.start() < loop.end for loop in loops):
            continue
        body, _, end = _body(script, m.start())
        condition = m.group(2)
        bounds = [
            int(b)
            for b in _BOUND.findall(condition + "\n" + body)
            if re.search(r"\$\(\(|\(\(|\blet\b|\+\+|\+=|\+ *1", body)
        ]
        iterations = max(bounds) if bounds else None
        loops.append(LoopEstimate(m.group(1), m.start(), end, iterations, sleep_seconds(body)))
    loops.sort(key=lambda loop: loop.start)
    return loops


def estimate_script(script: str) -> tuple[float | None, list[LoopEstimate]]:
    """(worst-case seconds, loops); None when some loop is unbounded. A top-level
    `timeout N` caps the whole script (one inside a loop bounds a command, not the loop)."""
    loops = estimate_loops(script)
    outside = script
    for loop in sorted(loops, key=lambda item: item.start, reverse=True):
        outside = outside[: loop.start] + outside[loop.end :]
    cap = _TIMEOUT.search(outside)
    if any(loop.worst_case is None for loop in loops):
        total: float | None = None
    else:
        total = sleep_seconds(outside) + sum(loop.worst_case or 0.0 for loop in loops)
    if cap is not None:
        limit = float(cap.group(1)) * _UNITS[cap.group(2)]
        total = limit if total is None else min(total, limit)
    return total, loops
