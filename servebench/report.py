"""Human output: a progress line while a run goes, a table at the end."""

from __future__ import annotations

import sys
from typing import TextIO

from servebench.gate import GateResult
from servebench.runner import Progress
from servebench.schema import BenchResult, LevelResult

_COLUMNS = (
    ("conc", 5),
    ("rep", 4),
    ("ok", 6),
    ("fail", 5),
    ("out tok/s", 10),
    ("req/s", 7),
    ("TTFT p50", 9),
    ("TTFT p99", 9),
    ("TPOT p50", 9),
    ("TPOT p99", 9),
    ("ITL p50", 8),
    ("E2EL p50", 9),
    ("accept", 7),
)


def _row(level: LevelResult) -> list[str]:
    spec = level.spec_decode
    return [
        "∞" if level.concurrency is None else str(level.concurrency),
        str(level.repeat + 1),
        str(level.completed),
        str(level.failed),
        f"{level.output_throughput:.1f}",
        f"{level.request_throughput:.2f}",
        f"{level.ttft_ms.median:.1f}",
        f"{level.ttft_ms.p99:.1f}",
        f"{level.tpot_ms.median:.2f}",
        f"{level.tpot_ms.p99:.2f}",
        f"{level.itl_ms.median:.2f}",
        f"{level.e2el_ms.median:.0f}",
        f"{spec.acceptance_rate:.1f}%" if spec else "-",
    ]


def format_table(result: BenchResult) -> str:
    """Times in ms; one row per level and repeat; errors and incompleteness spelled out."""
    lines = [
        f"{result.engine} · model {result.model or '?'} · started {result.started_at}",
        "  ".join(name.rjust(width) for name, width in _COLUMNS),
    ]
    for level in result.levels:
        cells = _row(level)
        lines.append("  ".join(c.rjust(w) for c, (_, w) in zip(cells, _COLUMNS, strict=True)))
    for level in result.levels:
        if level.spec_decode:
            lines.append(
                f"conc {level.concurrency}: mean acceptance length "
                f"{level.spec_decode.acceptance_length:.2f} tokens per step"
            )
        for message, count in level.errors.items():
            lines.append(f"conc {level.concurrency}: {count} request(s) failed: {message}")
    if result.incomplete:
        lines.append("INCOMPLETE: " + (result.error or "some requests failed (see above)"))
    return "\n".join(lines)


def format_gate(result: GateResult) -> str:
    head = f"gate: {result.verdict.upper()} (threshold {result.threshold_pct:g}%)"
    return "\n".join([head, *("  " + r for r in result.reasons)])


class ProgressBar:
    """One self-rewriting line on a terminal (plain lines elsewhere, at most one per 10%)."""

    def __init__(self, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self._last_tenth = -1

    def __call__(self, p: Progress) -> None:
        if p.total:
            fraction = p.done / p.total
            counts = f"{p.done}/{p.total}"
        else:
            fraction = min(1.0, p.elapsed_s / (p.duration_s or 1))
            counts = f"{p.done} req"
        filled = int(fraction * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        text = (
            f"repeat {p.repeat + 1}/{p.repeats} level {p.level_index + 1}/{p.levels} "
            f"conc {p.concurrency} [{bar}] {counts} {p.elapsed_s:5.1f}s"
            + (f" ({p.failed} failed)" if p.failed else "")
        )
        if self.tty:
            self.stream.write("\r" + text)
            if fraction >= 1:
                self.stream.write("\n")
        elif int(fraction * 10) != self._last_tenth or fraction >= 1:
            self._last_tenth = int(fraction * 10)
            self.stream.write(text + "\n")
        self.stream.flush()
