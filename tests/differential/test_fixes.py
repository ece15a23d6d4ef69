"""Every `--fix` is safe, proved on real systemd: each rule case with a fix
(tests/linting/rule_cases/*.toml, `fixed` and `argv`) is fixed, loaded by a real systemd in
a test host with its commands running the argv dumper, and must (a) load, (b) give the
argv the linter predicts, and (c) give the argv the case says the author meant."""

from __future__ import annotations

import pytest

from linting.execline.command import EXEC_KEYS
from linting.rules.codes import REMOVED, RULE_CODES
from linting.unitfile import parse_text
from tests.differential import harness
from tests.differential.corpus import TOKEN, Case
from tests.differential.dumper import build_dumper
from tests.linting.rule_cases import CASES, load_cases
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost


def fixed_cases() -> list[tuple[Case, tuple[tuple[str, ...], ...]]]:
    """(dumper unit, meant argv) per fixed rule case: the fixed unit's Environment= lines
    and every Exec command as an ExecStart= of a oneshot whose executable is the dumper
    (systemd loads and expands the rest of each line exactly as written)."""
    result = []
    for row in RULE_CODES:
        if row.status is REMOVED or not (CASES / f"{row.code}.toml").is_file():
            continue
        for case in load_cases(row.code)[1]:
            if not (case.fixed and case.argv):
                continue
            ((name, text),) = case.fixed.items()
            unit = parse_text(text, name)
            env = tuple(a.value.text for a in unit.get_all("Service", "Environment"))
            execs = tuple(
                _on_dumper(a.value.text) for key in EXEC_KEYS for a in unit.get_all("Service", key)
            )
            instance = "alice" if "@." in name else None
            result.append((Case(case.id, execs, env, instance=instance), case.argv))
    return result


def _on_dumper(value: str) -> str:
    """The Exec value with its executable (after the prefixes) replaced by the dumper."""
    stripped = value.lstrip("-@:+!")
    prefixes = value[: len(value) - len(stripped)]
    _executable, _, rest = stripped.partition(" ")
    return f"{prefixes}{TOKEN} {rest}"


def test_every_fixed_rule_case_loads_and_runs_what_the_author_meant(testhost: TestHost) -> None:
    build_dumper()
    pairs = fixed_cases()
    assert pairs, "no rule case pins a fix"
    cases = [case for case, _ in pairs]
    version = int(testhost.nsenter(["systemctl", "--version"], check=True).stdout.split()[1])
    predictions = harness.predict_all(cases, version, harness.read_host_facts(testhost))
    observed = harness.run_on_host(testhost, cases)
    failures = []
    for index, ((case, meant), pred, real) in enumerate(
        zip(pairs, predictions, observed, strict=True)
    ):
        runs = [tuple(a.decode() for a in argv[1:]) for argv in real.argvs]
        if real.load_state != "loaded" or not harness.agrees(pred, real):
            failures.append(harness.describe(case, index, pred, real))
        elif runs != [argv[1:] for argv in meant]:
            failures.append(f"{case.cid}: systemd ran {runs}, the fix meant {list(meant)}")
    assert not failures, "\n".join(failures)
