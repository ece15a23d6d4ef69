"""Does the rendered unit run the same commands as the original? Both are read with the
linter's Exec model (linting.context.UnitContext: systemd's word splitting, specifiers,
prefixes, `$` substitution, the environment systemd builds): for every Exec line the
argv, and the environment each command receives, must be equal (docs/unit-import.md)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from linting.context import UnitContext
from linting.execline.command import EXEC_KEYS
from linting.options import LintOptions
from linting.unitfile import UnitFile, parse_text


@dataclass(frozen=True)
class Sameness:
    """The verdict, with each difference in words (empty when equal)."""

    argv_equal: bool
    environment_equal: bool
    commands: int  # Exec commands compared
    argv_differences: list[str] = field(default_factory=list)
    environment_differences: list[str] = field(default_factory=list)
    setting_differences: list[str] = field(default_factory=list)  # not part of the verdict

    @property
    def equal(self) -> bool:
        return self.argv_equal and self.environment_equal


def unit_context(
    text: str, unit_name: str, options: LintOptions, dropins: Sequence[tuple[str, str]] = ()
) -> UnitContext:
    """The unit as systemd loads it: the file, then its drop-ins `(path, text)` in order."""
    unit = parse_text(text, unit_name, UnitFile(path=unit_name, name=unit_name))
    for path, dropin in dropins:
        parse_text(dropin, path, unit)
    return UnitContext(unit, options)


def _commands(ctx: UnitContext) -> dict[str, list[tuple[str, list[str], list[str]]]]:
    """Per Exec key: (prefixes, load-time argv, exec-time argv) of each command."""
    result: dict[str, list[tuple[str, list[str], list[str]]]] = {}
    for c in ctx.commands:
        words = [a.text for a in c.command.argv]
        result.setdefault(c.key, []).append(
            (c.command.prefixes, words, [a.value.text for a in c.args])
        )
    return result


def _argv_differences(original: UnitContext, rendered: UnitContext) -> list[str]:
    a, b = _commands(original), _commands(rendered)
    problems: list[str] = []
    for key in EXEC_KEYS:
        left, right = a.get(key, []), b.get(key, [])
        if len(left) != len(right):
            problems.append(
                f"{key}=: {len(left)} command(s) in the original, {len(right)} rendered"
            )
            continue
        for n, (one, two) in enumerate(zip(left, right, strict=True), start=1):
            problems.extend(_command_difference(f"{key}= command {n}", one, two))
    return problems


def _command_difference(
    where: str, one: tuple[str, list[str], list[str]], two: tuple[str, list[str], list[str]]
) -> list[str]:
    if one[0] != two[0]:
        return [f"{where}: prefixes {one[0]!r} in the original, {two[0]!r} rendered"]
    for label, left, right in (("words", one[1], two[1]), ("argv", one[2], two[2])):
        if left != right:
            at = next(
                (i for i, (x, y) in enumerate(zip(left, right, strict=False)) if x != y),
                min(len(left), len(right)),
            )
            shown = (left[at] if at < len(left) else "—", right[at] if at < len(right) else "—")
            return [
                f"{where}: {label} differ at argument {at} (original {shown[0]!r}, rendered "
                f"{shown[1]!r}; {len(left)} vs {len(right)} arguments)"
            ]
    return []


def _environment_of(ctx: UnitContext) -> dict[str, object]:
    """What the commands' environment is made of: the variables each Exec key receives,
    the EnvironmentFile= paths in order (their contents are the host's), and the
    PassEnvironment=/UnsetEnvironment= lists."""
    keys = sorted({c.key for c in ctx.commands})
    files = [(s.path, s.optional) for s in ctx.env_files.settings]
    passed = [
        a.value.text
        for name in ("PassEnvironment", "UnsetEnvironment")
        for a in ctx.unit.effective_list("Service", name)
    ]
    return {
        "variables": {key: dict(ctx.exec_environment(key)) for key in keys},
        "files": files,
        "passed": passed,
    }


def _environment_differences(original: UnitContext, rendered: UnitContext) -> list[str]:
    a, b = _environment_of(original), _environment_of(rendered)
    problems: list[str] = []
    if a["files"] != b["files"]:
        problems.append(f"EnvironmentFile=: {a['files']} in the original, {b['files']} rendered")
    if a["passed"] != b["passed"]:
        problems.append(f"Pass/UnsetEnvironment=: {a['passed']} vs {b['passed']}")
    left, right = a["variables"], b["variables"]
    assert isinstance(left, dict) and isinstance(right, dict)
    for key in sorted(set(left) | set(right)):
        one, two = left.get(key, {}), right.get(key, {})
        for name in sorted(set(one) | set(two)):
            if one.get(name) != two.get(name):
                problems.append(
                    f"{key}=: {name} is {one.get(name)!r} in the original, {two.get(name)!r} "
                    "rendered"
                )
    return problems


_NOT_SETTINGS = frozenset({"Environment", "EnvironmentFile", "PassEnvironment", "UnsetEnvironment"})


def setting_differences(original: UnitContext, rendered: UnitContext) -> list[str]:
    """Other settings whose value differs (the last assignment of each, as systemd keeps
    for a single-valued setting): no command or environment depends on them, so they do
    not decide the verdict, but the page names them."""

    def settings(ctx: UnitContext) -> dict[tuple[str, str], str]:
        found: dict[tuple[str, str], str] = {}
        for a in ctx.unit.assignments:
            if not a.name.startswith("Exec") and a.name not in _NOT_SETTINGS:
                found[(a.section, a.name)] = a.value.text
        return found

    one, two = settings(original), settings(rendered)
    result = []
    for section, key in sorted(set(one) | set(two)):
        left, right = one.get((section, key)), two.get((section, key))
        if left != right:
            was = "not set (systemd's default)" if left is None else f"{left!r}"
            now = "not set" if right is None else f"{right!r}"
            result.append(f"[{section}] {key}=: {was} in the original, {now} rendered")
    return result


def compare_units(
    original: str,
    rendered: str,
    unit_name: str,
    options: LintOptions,
    dropins: Sequence[tuple[str, str]] = (),
) -> Sameness:
    """The argv and environment of every Exec command, original against rendered, each
    with the same drop-ins (they stay on the host)."""
    one = unit_context(original, unit_name, options, dropins)
    two = unit_context(rendered, unit_name, options, dropins)
    argv = _argv_differences(one, two)
    env = _environment_differences(one, two)
    return Sameness(not argv, not env, len(one.commands), argv, env, setting_differences(one, two))
