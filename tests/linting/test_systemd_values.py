"""Tests for linting.systemd.values.

Expected outcomes were checked against real systemd with ``systemd-analyze verify``
(252.39 on Debian 12, 255.4 from Ubuntu 24.04 and 257.13 in a Debian 13 chroot); the
tests themselves do not run systemd.
"""

from __future__ import annotations

import pytest

from linting.systemd.catalog import load_catalog
from linting.systemd.values import (
    USEC_INFINITY,
    VALIDATORS,
    ValueProblem,
    parse_boolean,
    parse_time,
)

MIN = 60_000_000
SEC = 1_000_000


@pytest.mark.parametrize(
    ("value", "usec"),
    [
        ("30min", 30 * MIN),
        ("30 min", 30 * MIN),
        ("1min 30s", 90 * SEC),
        ("1h30m", 90 * MIN),
        ("5m", 5 * MIN),  # "m" is minutes ...
        ("5M", 2_629_800 * 5 * SEC),  # ... "M" is months
        ("100ms", 100_000),
        ("90", 90 * SEC),  # bare numbers are seconds
        ("1 2", 3 * SEC),  # sums, unit optional
        ("1.5h", 90 * MIN),
        (".5s", 500_000),
        ("+5s", 5 * SEC),
        ("12.34 .56", 12_900_000),
        ("10 seconds", 10 * SEC),
        ("20μs", 20),
        ("0", 0),
        ("infinity", USEC_INFINITY),
    ],
)
def test_parse_time_accepts(value: str, usec: int) -> None:
    assert parse_time(value) == usec


@pytest.mark.parametrize(
    ("value", "start", "end"),
    [
        ("30 mins", 6, 7),  # "min" matches, the leftover "s" is not a number
        ("abc", 0, 3),
        ("", 0, 0),
        ("1.", 1, 2),
        ("-0", 0, 2),
        ("12.34.56", 5, 8),
        ("infinityx", 8, 9),
        ("3.hoge", 1, 2),
        ("99999999999999999999", 0, 20),
    ],
)
def test_parse_time_rejects(value: str, start: int, end: int) -> None:
    problem = parse_time(value)
    assert isinstance(problem, ValueProblem)
    assert (problem.start, problem.end) == (start, end)


def test_parse_boolean() -> None:
    for word in ("1", "yes", "Y", "TRUE", "t", "On"):
        assert parse_boolean(word) is True
    for word in ("0", "no", "N", "false", "F", "OFF"):
        assert parse_boolean(word) is False
    for word in ("", "2", "ja", "enabled", "yes "):
        assert parse_boolean(word) is None


@pytest.mark.parametrize(
    ("parser", "value", "ok"),
    [
        ("config_parse_service_timeout", "30min", True),
        ("config_parse_service_timeout", "30 mins", False),
        ("config_parse_service_timeout", "abc", False),
        ("config_parse_service_timeout", "", False),  # empty is not a reset here
        ("config_parse_service_timeout", "0", True),
        ("config_parse_sec", "", False),
        ("config_parse_sec", "100ms", True),
        ("config_parse_sec_fix_0", "", False),
        ("config_parse_sec_def_infinity", "", True),
        ("config_parse_sec_def_infinity", "x", False),
        ("config_parse_service_timeout_abort", "", True),
        ("config_parse_service_timeout_abort", "bad", False),
        ("config_parse_bool", "yes", True),
        ("config_parse_bool", "", False),
        ("config_parse_bool", "2", False),
        ("config_parse_tristate", "", True),
        ("config_parse_tristate", "maybe", False),
        ("config_parse_unsigned", "5", True),
        ("config_parse_unsigned", "0x10", True),
        ("config_parse_unsigned", "010", True),
        ("config_parse_unsigned", "0b11", True),
        ("config_parse_unsigned", "0o7", True),
        ("config_parse_unsigned", "+3", True),
        ("config_parse_unsigned", "-0", True),
        ("config_parse_unsigned", "-1", False),
        ("config_parse_unsigned", "4294967296", False),
        ("config_parse_unsigned", "", False),
        ("config_parse_unsigned", "5x", False),
        ("config_parse_unsigned", "0x", False),
        ("config_parse_int", "-1", True),
        ("config_parse_int", "2147483648", False),
        ("config_parse_int", "-2147483648", True),
        ("config_parse_service_restart", "always", True),
        ("config_parse_service_restart", "yes", False),
        ("config_parse_service_restart", "", False),
        ("config_parse_kill_mode", "mixed", True),
        ("config_parse_kill_mode", "", True),  # reset to control-group
        ("config_parse_kill_mode", "group", False),
    ],
)
def test_validators(parser: str, value: str, ok: bool) -> None:
    for version in (252, 255, 257):
        assert (VALIDATORS[parser](value, version) is None) is ok, version


def test_service_type_per_version() -> None:
    validate = VALIDATORS["config_parse_service_type"]
    assert validate("exec", 252) is None
    problem = validate("notify-reload", 252)
    assert problem is not None and "253" not in problem.message  # table read from 252.39
    assert "needs systemd >= 255" in problem.message
    assert (problem.start, problem.end) == (0, len("notify-reload"))
    assert validate("notify-reload", 255) is None
    assert validate("notify-reload", 257) is None
    assert validate("Notify", 257) is not None  # case-sensitive
    assert validate("", 257) is not None  # no reset for Type=


def test_restart_mode_per_version() -> None:
    validate = VALIDATORS["config_parse_service_restart_mode"]
    assert validate("direct", 252) is not None  # key unknown before 254
    assert validate("direct", 255) is None
    assert validate("debug", 255) is not None
    assert validate("debug", 257) is None
    assert validate("x", 257) is not None


def test_kill_mode_none_is_a_non_ignoring_warning() -> None:
    problem = VALIDATORS["config_parse_kill_mode"]("none", 252)
    assert problem is not None and problem.ignored is False
    assert VALIDATORS["config_parse_kill_mode"]("group", 252).ignored is True


def test_validators_are_keyed_by_real_parser_names() -> None:
    used = {
        parser
        for version in (252, 255, 257)
        for keys in load_catalog(version).sections.values()
        for parser in keys.values()
    }
    assert set(VALIDATORS) <= used
