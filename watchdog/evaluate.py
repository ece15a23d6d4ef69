"""From one reading and the short history before it to the verdicts of every check, and
the history to keep for the next time. Pure (no I/O, no database): tests feed it readings.

The history is JSON in `HostWatch.readings` and bounded: per unit the (time, NRestarts)
pairs and /metrics samples of the last `KEEP_S` seconds, at most `KEEP_ENTRIES` each.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hostops.channel.push import sha256_hex
from hostops.gpu_clean import parse_environment
from watchdog import checks
from watchdog.metrics import Sample, tokens_per_second
from watchdog.reader import HostRead, UnitRead

KEEP_ENTRIES = 80
KEEP_MARGIN_S = 60.0


@dataclass(frozen=True)
class Windows:
    """The checks' windows and thresholds (settings `WATCHDOG_*`, docs/watchdog.md)."""

    hung_s: float = checks.DEFAULT_HUNG_WINDOW_S
    acceptance_s: float = checks.DEFAULT_ACCEPTANCE_WINDOW_S
    min_draft_tokens: int = checks.DEFAULT_MIN_DRAFT_TOKENS
    collapse_ratio: float = checks.DEFAULT_COLLAPSE_RATIO
    loop_s: float = checks.DEFAULT_LOOP_WINDOW_S
    loop_restarts: int = checks.DEFAULT_LOOP_RESTARTS

    @property
    def keep_s(self) -> float:
        return max(self.hung_s, self.acceptance_s, self.loop_s) + KEEP_MARGIN_S


@dataclass(frozen=True)
class Evaluation:
    verdicts: tuple[checks.Verdict, ...]
    history: dict[str, Any]
    now: dict[str, Any]  # what the fleet page shows

    @property
    def recheck_at(self) -> float | None:
        """The soonest time a verdict asked to be read again at (`checks.Verdict`)."""
        times = [v.recheck_at for v in self.verdicts if v.recheck_at is not None]
        return min(times, default=None)


def _pruned(entries: list[Any], now: float, keep_s: float, at: Any) -> list[Any]:
    kept = [e for e in entries if at(e) >= now - keep_s]
    return kept[-KEEP_ENTRIES:]


def evaluate(read: HostRead, history: dict[str, Any], windows: Windows = Windows()) -> Evaluation:
    verdicts: list[checks.Verdict] = [checks.check_reach(read.errors)]
    if "ssh" in read.errors:  # nothing was read: nothing else is judged
        return Evaluation(tuple(verdicts), history, _now(read, {}, True))
    past = history.get("units", {}) if isinstance(history, dict) else {}
    kept: dict[str, Any] = {}
    watched: list[checks.Watched] = []
    for unit in read.units:
        name = unit.target.unit
        before = past.get(name, {}) if isinstance(past.get(name), dict) else {}
        restarts = [tuple(r) for r in before.get("restarts", []) if len(r) == 2]
        samples = [Sample.from_json(s) for s in before.get("samples", [])]
        if unit.state is not None:
            restarts.append((read.at, unit.state.n_restarts))
            restarts = _pruned(restarts, read.at, windows.keep_s, lambda r: r[0])
            verdicts.append(
                checks.check_unit(
                    unit.state,
                    restarts,
                    loop_window_s=windows.loop_s,
                    loop_restarts=windows.loop_restarts,
                )
            )
            env = parse_environment(unit.state.environment)
            watched.append(checks.service_of(unit.state, env))
        verdicts.extend(_file_verdicts(unit))
        if unit.sample is not None:
            samples.append(unit.sample)
            samples = _pruned(samples, read.at, windows.keep_s, lambda s: s.at)
            verdicts.append(checks.check_hung(name, samples, window_s=windows.hung_s))
            verdicts.append(
                checks.check_acceptance(
                    name,
                    samples,
                    unit.target.expected_acceptance,
                    window_s=windows.acceptance_s,
                    min_draft_tokens=windows.min_draft_tokens,
                    ratio=windows.collapse_ratio,
                )
            )
        elif unit.state is not None and not unit.state.running:
            samples = []  # a stopped server's counters start again from zero
            for scope in (f"engine:{name}", f"acceptance:{name}"):
                verdicts.append(checks.Verdict(scope, name))
        verdicts.extend(_canary_verdicts(read, unit))
        kept[name] = {
            "restarts": [list(r) for r in restarts],
            "samples": [s.as_json() for s in samples],
        }
    if read.gpus is not None:
        all_units_read = all(u.state is not None for u in read.units)
        if all_units_read:  # attribution needs every service's cgroup
            verdicts.append(checks.check_gpus(read.gpus, read.infos, watched))
    return Evaluation(tuple(verdicts), {"units": kept}, _now(read, kept, False))


def _canary_verdicts(read: HostRead, unit: UnitRead) -> list[checks.Verdict]:
    """The canary's answer judged; with the canary off, or the unit stopped, its scope
    is judged empty (an incident it opened closes)."""
    name = unit.target.unit
    if unit.canary is not None:
        return [checks.check_canary(name, unit.canary)]
    if unit.state is not None and (not read.canary or not unit.state.running):
        return [checks.Verdict(f"canary:{name}", name)]
    return []


def _file_verdicts(unit: UnitRead) -> list[checks.Verdict]:
    """Drift of the unit file, and of its drop-ins: each judged only when it was read."""
    name = unit.target.unit
    verdicts = []
    if unit.file_read:
        verdicts.append(checks.check_drift(name, unit.target.approved_text, unit.file))
    if unit.drop_ins is not None:
        approved = dict(unit.target.approved_drop_ins)
        verdicts.append(checks.check_drop_ins(name, approved, unit.drop_ins))
    return verdicts


def _now(read: HostRead, kept: dict[str, Any], unreachable: bool) -> dict[str, Any]:
    """The fleet page's row: per unit its state, text hash, tok/s and requests now."""
    units = []
    for unit in read.units:
        samples = [Sample.from_json(s) for s in kept.get(unit.target.unit, {}).get("samples", [])]
        rate = tokens_per_second(samples[-2], samples[-1]) if len(samples) >= 2 else None
        approved = sha256_hex(unit.target.approved_text.encode("utf-8"))
        on_host = sha256_hex(unit.file) if unit.file is not None else ""
        units.append(
            {
                "unit": unit.target.unit,
                "version": unit.target.version,
                "state": unit.state.as_json() if unit.state else None,
                "sha256": on_host if unit.file_read else None,
                "approved_sha256": approved,
                "tok_s": None if rate is None else round(rate, 1),
                "running": unit.sample.running if unit.sample else None,
                "waiting": unit.sample.waiting if unit.sample else None,
            }
        )
    gpus = [
        {"index": g.index, "used_mib": g.memory_used_mib, "total_mib": g.memory_total_mib}
        for g in sorted(read.gpus or [], key=lambda g: g.index)
    ]
    return {
        "at": read.at,
        "seconds": round(read.seconds, 3),
        "units": units,
        "gpus": gpus if read.gpus is not None else None,
        "errors": {k: v[:300] for k, v in sorted(read.errors.items())},
        "unreachable": unreachable,
    }


__all__ = ["Evaluation", "Windows", "evaluate"]
