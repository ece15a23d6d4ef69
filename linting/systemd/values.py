"""Ports of systemd's value parsers for typed unit-file keys.

Each validator takes the value exactly as systemd hands it to the ``config_parse_*``
function (``config_parse()`` in src/shared/conf-parser.c strips surrounding whitespace
first) and the systemd version, and returns ``None`` when systemd accepts the value or a
``ValueProblem`` with offsets into that string.  Why ported instead of approximated: an
assignment systemd cannot parse is *ignored with a warning* — the unit still starts, with
the default instead of what was written (e.g. ``TimeoutStartSec=30 mins`` leaves 90 s).

Sources (identical in the generated versions unless noted; read from the systemd 252.39,
255.4 and 257.13 release tarballs): src/basic/parse-util.c (``parse_boolean``,
``safe_atou_full``, ``safe_atoi``, ``mangle_base``), src/basic/time-util.c
(``parse_time``, ``extract_multiplier``, ``parse_sec``, ``parse_sec_fix_0``,
``parse_sec_def_infinity``), src/shared/conf-parser.[ch] (``DEFINE_PARSER``,
``DEFINE_CONFIG_PARSE_ENUM``, ``config_parse_bool``, ``config_parse_tristate``),
src/core/load-fragment.c (``config_parse_service_timeout``, ``config_parse_timeout_abort``,
``config_parse_kill_mode``) and the string tables in src/core/service.c and
src/basic/unit-def.c / src/core/kill.c.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["VALIDATORS", "ValueProblem", "parse_boolean", "parse_time"]


@dataclass(frozen=True)
class ValueProblem:
    """Why systemd rejects (or only grudgingly accepts) a value; ``[start, end)`` in the value.

    ``ignored`` is True when systemd drops the assignment (the default stays in force) and
    False when it accepts the value but warns (e.g. the deprecated ``KillMode=none``).
    """

    message: str
    start: int
    end: int
    ignored: bool = True


Validator = Callable[[str, int], "ValueProblem | None"]

# src/basic/string-util.h: #define WHITESPACE " \t\n\r"
_WHITESPACE = " \t\n\r"
# C isspace() in the "C" locale, skipped by strtol()/strtoul() themselves.
_C_ISSPACE = " \t\n\v\f\r"
_DIGITS = "0123456789"

USEC_PER_SEC = 1_000_000
USEC_PER_MINUTE = 60 * USEC_PER_SEC
USEC_PER_HOUR = 60 * USEC_PER_MINUTE
USEC_PER_DAY = 24 * USEC_PER_HOUR
USEC_PER_WEEK = 7 * USEC_PER_DAY
USEC_PER_MONTH = 2_629_800 * USEC_PER_SEC  # time-util.h: 30.44 days
USEC_PER_YEAR = 31_557_600 * USEC_PER_SEC  # time-util.h: 365.25 days
USEC_INFINITY = 2**64 - 1  # (usec_t) UINT64_MAX
_LLONG_MAX = 2**63 - 1
_ULONG_MAX = 2**64 - 1
_UINT_MAX = 2**32 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1

# time-util.c extract_multiplier(): first prefix match wins, so the order matters
# ("ms" before "m", "M" is month, "m" is minute; suffixes are case-sensitive).
_TIME_UNITS: tuple[tuple[str, int], ...] = (
    ("seconds", USEC_PER_SEC),
    ("second", USEC_PER_SEC),
    ("sec", USEC_PER_SEC),
    ("s", USEC_PER_SEC),
    ("minutes", USEC_PER_MINUTE),
    ("minute", USEC_PER_MINUTE),
    ("min", USEC_PER_MINUTE),
    ("months", USEC_PER_MONTH),
    ("month", USEC_PER_MONTH),
    ("M", USEC_PER_MONTH),
    ("msec", 1000),
    ("ms", 1000),
    ("m", USEC_PER_MINUTE),
    ("hours", USEC_PER_HOUR),
    ("hour", USEC_PER_HOUR),
    ("hr", USEC_PER_HOUR),
    ("h", USEC_PER_HOUR),
    ("days", USEC_PER_DAY),
    ("day", USEC_PER_DAY),
    ("d", USEC_PER_DAY),
    ("weeks", USEC_PER_WEEK),
    ("week", USEC_PER_WEEK),
    ("w", USEC_PER_WEEK),
    ("years", USEC_PER_YEAR),
    ("year", USEC_PER_YEAR),
    ("y", USEC_PER_YEAR),
    ("usec", 1),
    ("us", 1),
    ("\u03bcs", 1),  # GREEK SMALL LETTER MU
    ("\u00b5s", 1),  # MICRO SIGN
)

# String tables, keyed by the systemd table (catalog) version they were read from; a
# version uses the highest table not newer than itself, like linting.systemd.catalog.
# src/core/service.c service_type_table: notify-reload is new in 253 (absent from 252.39).
_SERVICE_TYPES: dict[int, tuple[str, ...]] = {
    252: ("simple", "forking", "oneshot", "dbus", "notify", "idle", "exec"),
    255: ("simple", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle", "exec"),
}
# src/core/service.c service_restart_table (unchanged 252..257).
_SERVICE_RESTARTS: dict[int, tuple[str, ...]] = {
    252: (
        "no",
        "on-success",
        "on-failure",
        "on-abnormal",
        "on-watchdog",
        "on-abort",
        "always",
    ),
}
# src/core/service.c service_restart_mode_table: RestartMode= is new in 254 (absent from
# 252.39), "debug" new in 257.
_SERVICE_RESTART_MODES: dict[int, tuple[str, ...]] = {
    255: ("normal", "direct"),
    257: ("normal", "direct", "debug"),
}
# kill_mode_table (src/core/kill.c; unchanged 252..257).
_KILL_MODES: dict[int, tuple[str, ...]] = {252: ("control-group", "process", "mixed", "none")}


def _table_for(tables: dict[int, tuple[str, ...]], version: int) -> tuple[str, ...] | None:
    usable = [v for v in tables if v <= version]
    return tables[max(usable)] if usable else None


def _whole(value: str, message: str, ignored: bool = True) -> ValueProblem:
    return ValueProblem(message, 0, max(len(value), 0), ignored)


def _token_end(value: str, pos: int) -> int:
    end = pos
    while end < len(value) and value[end] not in _WHITESPACE:
        end += 1
    return max(end, pos + 1) if value else 0


# --- parse-util.c -------------------------------------------------------------------


def parse_boolean(value: str) -> bool | None:
    """parse-util.c parse_boolean(): STRCASE_IN_SET of 1/yes/y/true/t/on and 0/no/n/false/f/off."""
    lowered = value.lower() if value.isascii() else None
    if lowered in ("1", "yes", "y", "true", "t", "on"):
        return True
    if lowered in ("0", "no", "n", "false", "f", "off"):
        return False
    return None


def _strtol(s: str, pos: int, base: int) -> tuple[int, int, bool]:
    """C strtol()/strtoul() digit scan: returns (value, end, overflowed); end == pos if none.

    Skips isspace(), takes one optional sign, and for base 0 picks 16 ("0x"), 8 ("0") or 10.
    The magnitude is returned signed; callers apply the C range rules.
    """
    i = pos
    while i < len(s) and s[i] in _C_ISSPACE:
        i += 1
    negative = False
    if i < len(s) and s[i] in "+-":
        negative = s[i] == "-"
        i += 1
    if (
        base in (0, 16)
        and s[i : i + 2].lower() == "0x"
        and i + 2 < len(s)
        and s[i + 2].lower() in "0123456789abcdef"
    ):
        i += 2
        base = 16
    if base == 0:
        base = 8 if s[i : i + 1] == "0" else 10
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    start = i
    while i < len(s) and s[i].isascii() and s[i].lower() in digits:
        i += 1
    if i == start:
        return 0, pos, False
    magnitude = int(s[start:i], base)
    return (-magnitude if negative else magnitude), i, False


def _mangle_base(s: str, pos: int) -> tuple[int, int]:
    """parse-util.c mangle_base(): Python-style "0b"/"0o" prefixes; else base 0 (C rules)."""
    if s[pos : pos + 2] in ("0b", "0B"):
        return pos + 2, 2
    if s[pos : pos + 2] in ("0o", "0O"):
        return pos + 2, 8
    return pos, 0


def _safe_ato(value: str, *, unsigned: bool) -> ValueProblem | None:
    """parse-util.c safe_atou_full(s, 0, …) / safe_atoi(): whole string must be a number."""
    kind = "unsigned" if unsigned else "int"
    pos = len(value) - len(value.lstrip(_WHITESPACE))
    pos, base = _mangle_base(value, pos)
    number, end, _ = _strtol(value, pos, base)
    if end == pos or end != len(value):
        bad = end if end != pos else pos
        return ValueProblem(
            f"Failed to parse {kind} value, ignoring: {value!r} is not a number",
            min(bad, len(value)),
            max(len(value), bad + 1) if value else 0,
        )
    if unsigned:
        # strtoul() wraps negatives (error only on ULONG_MAX overflow); safe_atou_full then
        # refuses a leading "-" unless the value is 0, and anything above UINT_MAX.
        magnitude = -number if number < 0 else number
        if magnitude > _ULONG_MAX or (number != 0 and value[pos:].lstrip(_C_ISSPACE)[:1] == "-"):
            return _whole(
                value, f"Failed to parse unsigned value, ignoring: {value} (out of range)"
            )
        if number > _UINT_MAX:
            return _whole(
                value, f"Failed to parse unsigned value, ignoring: {value} (> {_UINT_MAX})"
            )
        return None
    if not _INT_MIN <= number <= _INT_MAX:
        return _whole(value, f"Failed to parse int value, ignoring: {value} (out of range)")
    return None


# --- time-util.c --------------------------------------------------------------------


def _extract_multiplier(s: str, pos: int) -> tuple[int, int | None]:
    for suffix, usec in _TIME_UNITS:
        if s.startswith(suffix, pos):
            return pos + len(suffix), usec
    return pos, None


# Remembered: a pure function of its text, asked for the same few values (`90s`, `45min`)
# by several rules for every unit of a run.
@lru_cache(maxsize=4096)
def parse_time(value: str, default_unit: int = USEC_PER_SEC) -> int | ValueProblem:
    """time-util.c parse_time(): microseconds, or the problem with its position.

    Accepts "infinity", sums of ``<number>[.<digits>][ ]<unit>`` ("1min 30s", "1.5h",
    "30 min"), bare numbers in ``default_unit``; refuses "-0", "30 mins" (the unit is
    matched by prefix and the leftover "s" is not a number), "1.", "12.34.56".
    """
    p = len(value) - len(value.lstrip(_WHITESPACE))
    if value.startswith("infinity", p):
        rest = value[p + len("infinity") :]
        if rest.strip(_WHITESPACE):
            q = p + len("infinity") + (len(rest) - len(rest.lstrip(_WHITESPACE)))
            return ValueProblem(f"Unexpected text after 'infinity': {value[q:]!r}", q, len(value))
        return USEC_INFINITY
    total = 0
    something = False
    while True:
        while p < len(value) and value[p] in _WHITESPACE:
            p += 1
        if p >= len(value):
            return total if something else ValueProblem("Empty time span", 0, len(value))
        step = _time_component(value, p, total, default_unit)
        if isinstance(step, ValueProblem):
            return step
        p, total = step
        something = True


def _time_component(
    value: str, p: int, total: int, default_unit: int
) -> tuple[int, int] | ValueProblem:
    """One `<number>[.<digits>][ ]<unit>` at `p`, added to `total`: (next position, new
    total) — one pass of parse_time()'s loop."""
    token_start = p
    parsed = _time_number(value, p)
    if isinstance(parsed, ValueProblem):
        return parsed
    number, e, p = parsed
    q = p
    while q < len(value) and value[q] in _WHITESPACE:
        q += 1
    s, multiplier = _extract_multiplier(value, q)
    if s == p and s < len(value):
        # 'Don't allow "12.34.56", but accept "12.34 .56" or "12.34s.56"'
        unit_end = _token_end(value, p)
        return ValueProblem(f"Unknown time unit {value[p:unit_end]!r}", p, unit_end)
    multiplier = multiplier or default_unit
    if number >= USEC_INFINITY // multiplier or number * multiplier >= USEC_INFINITY - total:
        return ValueProblem("Time span out of range", token_start, s)
    total += number * multiplier
    if e < len(value) and value[e] == ".":
        fraction = _time_fraction(value, e, total, multiplier)
        if fraction is None:
            return ValueProblem("Time span out of range", token_start, s)
        if isinstance(fraction, ValueProblem):
            return fraction
        total = fraction
    return s, total


def _time_number(value: str, p: int) -> tuple[int, int, int] | ValueProblem:
    """The number at `p`: (its integer part, where that ends, where its digits end)."""
    end = _token_end(value, p)
    if value[p] == "-":  # 'Don't allow "-0"'
        return ValueProblem("Negative time spans are not allowed", p, end)
    number, e, _ = _strtol(value, p, 10)
    if number < 0:
        return ValueProblem("Negative time spans are not allowed", p, end)
    if number > _LLONG_MAX:
        return ValueProblem("Time span out of range", p, end)
    if e < len(value) and value[e] == ".":
        p = e + 1
        while p < len(value) and value[p] in _DIGITS:
            p += 1
        return number, e, p
    if e == p:
        return ValueProblem(f"Expected a number, found {value[p:end]!r}", p, end)
    return number, e, e


def _time_fraction(value: str, dot: int, total: int, multiplier: int) -> int | ValueProblem | None:
    """The digits after the `.` at `dot`, each worth a tenth of the one before; None when
    the sum overflows."""
    m = multiplier // 10
    b = dot + 1
    while b < len(value) and value[b] in _DIGITS:
        k = int(value[b]) * m
        if k >= USEC_INFINITY - total:
            return None
        total += k
        b += 1
        m //= 10
    if b == dot + 1:  # 'Don't allow "0.-0", "3.+1", "3. 1", "3.sec" or "3.hoge"'
        return ValueProblem("Expected digits after '.'", dot, dot + 1)
    return total


# --- config_parse_* validators --------------------------------------------------------


def _time_problem(value: str, label: str) -> ValueProblem | None:
    result = parse_time(value)
    if isinstance(result, ValueProblem):
        return ValueProblem(
            f"Failed to parse {label}, ignoring: {result.message}", result.start, result.end
        )
    return None


def config_parse_bool(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c config_parse_bool(): parse_boolean(); an empty value is an error too."""
    if parse_boolean(value) is None:
        return _whole(
            value,
            f"Failed to parse boolean value, ignoring: {value!r} "
            "(expected 1/yes/y/true/t/on or 0/no/n/false/f/off)",
        )
    return None


def config_parse_tristate(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c config_parse_tristate(): like bool, but empty means "unset"."""
    if value == "":
        return None
    return config_parse_bool(value, version)


def config_parse_sec(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c DEFINE_PARSER(sec, usec_t, parse_sec): empty is an error (not a reset)."""
    return _time_problem(value, "sec value")


def config_parse_sec_fix_0(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c config_parse_sec_fix_0 → parse_sec_fix_0(): same syntax, 0 means infinity."""
    return _time_problem(value, "time value")


def config_parse_sec_def_infinity(value: str, version: int) -> ValueProblem | None:
    """time-util.c parse_sec_def_infinity(): empty (or blank) means infinity."""
    if value.strip(_WHITESPACE) == "":
        return None
    return _time_problem(value, "sec_def_infinity value")


def config_parse_service_timeout(value: str, version: int) -> ValueProblem | None:
    """load-fragment.c config_parse_service_timeout() (TimeoutSec=, TimeoutStartSec=).

    parse_sec_fix_0(): 0 means "no timeout"; an empty value is *not* a reset here.
    """
    return _time_problem(value, "timeout")


def config_parse_service_timeout_abort(value: str, version: int) -> ValueProblem | None:
    """load-fragment.c config_parse_timeout_abort(): empty resets, else parse_sec()."""
    if value == "":
        return None
    return _time_problem(value, "timeout")


def config_parse_unsigned(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c DEFINE_PARSER(unsigned, unsigned, safe_atou): base 0 ("0x10", "010" octal)."""
    return _safe_ato(value, unsigned=True)


def config_parse_int(value: str, version: int) -> ValueProblem | None:
    """conf-parser.c DEFINE_PARSER(int, int, safe_atoi)."""
    return _safe_ato(value, unsigned=False)


def _enum_validator(tables: dict[int, tuple[str, ...]], what: str, *, empty_ok: bool) -> Validator:
    """DEFINE_CONFIG_PARSE_ENUM: exact, case-sensitive string_table_lookup(); empty fails."""

    def validate(value: str, version: int) -> ValueProblem | None:
        allowed = _table_for(tables, version)
        if allowed is None:
            return _whole(value, f"{what} is not supported by systemd {version}")
        if value == "" and empty_ok:
            return None
        if value not in allowed:
            hint = f" (systemd {version} accepts: {', '.join(allowed)})"
            newer = sorted(v for v, t in tables.items() if v > version and value in t)
            if newer:
                hint = f" ('{value}' needs systemd >= {newer[0]}){hint}"
            return _whole(value, f"Failed to parse {what}, ignoring: {value!r}{hint}")
        return None

    validate.__doc__ = f"Valid {what} values per systemd version."
    return validate


config_parse_service_type = _enum_validator(_SERVICE_TYPES, "service type", empty_ok=False)
config_parse_service_restart = _enum_validator(
    _SERVICE_RESTARTS, "service restart specifier", empty_ok=False
)
config_parse_service_restart_mode = _enum_validator(
    _SERVICE_RESTART_MODES, "service restart mode", empty_ok=False
)
_kill_mode_enum = _enum_validator(_KILL_MODES, "kill mode specification", empty_ok=True)


def config_parse_kill_mode(value: str, version: int) -> ValueProblem | None:
    """load-fragment.c config_parse_kill_mode(): empty resets to control-group; "none" warns."""
    problem = _kill_mode_enum(value, version)
    if problem is None and value == "none":
        return _whole(
            value,
            "KillMode=none is unsafe and deprecated: systemd leaves the service's processes "
            "running on stop",
            ignored=False,
        )
    return problem


VALIDATORS: dict[str, Validator] = {
    "config_parse_bool": config_parse_bool,
    "config_parse_tristate": config_parse_tristate,
    "config_parse_sec": config_parse_sec,
    "config_parse_sec_fix_0": config_parse_sec_fix_0,
    "config_parse_sec_def_infinity": config_parse_sec_def_infinity,
    "config_parse_service_timeout": config_parse_service_timeout,
    "config_parse_service_timeout_abort": config_parse_service_timeout_abort,
    "config_parse_unsigned": config_parse_unsigned,
    "config_parse_int": config_parse_int,
    "config_parse_service_type": config_parse_service_type,
    "config_parse_service_restart": config_parse_service_restart,
    "config_parse_service_restart_mode": config_parse_service_restart_mode,
    "config_parse_kill_mode": config_parse_kill_mode,
}
