"""The start and stop timeouts in force for a unit (OP401, OP403, OP405 read them)."""

from __future__ import annotations

from linting.context import UnitContext
from linting.spans import Span
from linting.systemd.values import USEC_INFINITY, USEC_PER_SEC, ValueProblem, parse_time

DEFAULT_TIMEOUT_SEC = 90.0  # DefaultTimeoutStartSec= / DefaultTimeoutStopSec= (systemd-system.conf)


def timeout_in_effect(ctx: UnitContext, *keys: str) -> tuple[float | None, Span | None]:
    """The timeout in effect from the last of `keys` (later keys override earlier ones in
    file order); (None, span) for "infinity"/0, (default, None) when unset or invalid.

    An assignment systemd cannot parse is ignored and the one before it stays in force; an
    empty value is no reset for these keys (parse_sec_fix_0() and parse_sec() refuse "")."""
    found = [a for a in ctx.unit.assignments if a.section == "Service" and a.name in keys]
    for a in reversed(found):
        parsed = parse_time(a.value.text)
        if isinstance(parsed, ValueProblem):
            continue
        if parsed in (0, USEC_INFINITY):
            return None, a.value.span()
        return parsed / USEC_PER_SEC, a.value.span()
    return DEFAULT_TIMEOUT_SEC, None


def fmt_seconds(seconds: float) -> str:
    if seconds >= 120 and seconds % 60 == 0:
        return f"{int(seconds // 60)} min"
    return f"{seconds:g} s"
