"""The library API: `lint_paths(paths, options) -> Report`. No Django, no database."""

from __future__ import annotations

import dataclasses
import glob
import sys
from collections.abc import Iterable, Iterator
from contextlib import nullcontext
from pathlib import Path

from linting.context import RunContext, ShellCheckJob, UnitContext
from linting.findings import Finding, Hit
from linting.options import LintOptions
from linting.report import CommandInfo, FileReport, InputError, Report, VersionInfo
from linting.rules.codes import PREVIEW
from linting.rules.registry import Rule, all_rules, selected
from linting.shell.shellcheck import ShellCheckPool
from linting.spans import Span
from linting.unitfile import UnitFile, parse_file, parse_text

# How often (in units) the rules pass reads the reports of ShellCheck batches that ended.
SETTLE_EVERY = 25

UNIT_SUFFIXES = (
    ".service",
    ".socket",
    ".timer",
    ".target",
    ".path",
    ".mount",
    ".automount",
    ".swap",
    ".slice",
    ".scope",
    ".device",
)


def _is_unit_file(path: Path) -> bool:
    return path.suffix in UNIT_SUFFIXES and path.is_file()


def expand_paths(paths: Iterable[str]) -> tuple[list[str], list[InputError]]:
    """Files, directories (recursively, unit files only; drop-ins go with their unit),
    globs and `-` (stdin) → the list of inputs, plus errors for what does not exist."""
    result: list[str] = []
    errors: list[InputError] = []
    for raw in paths:
        if raw == "-":
            result.append("-")
            continue
        path = Path(raw)
        if path.is_dir():
            found = sorted(
                str(p)
                for p in path.rglob("*")
                if _is_unit_file(p) and not p.parent.name.endswith(".d")
            )
            if not found:  # a wrong directory must not pass as "0 files, no findings"
                errors.append(InputError(raw, "no unit files (.service, .socket, …) in it"))
                continue
            result.extend(found)
            continue
        if path.is_file():
            result.append(raw)
            continue
        if any(ch in raw for ch in "*?["):
            matches = sorted(m for m in glob.glob(raw, recursive=True) if Path(m).is_file())
            if matches:
                result.extend(matches)
                continue
            errors.append(InputError(raw, "no files match this pattern"))
            continue
        errors.append(InputError(raw, "no such file or directory"))
    # keep order, drop duplicates
    seen: set[str] = set()
    unique = [p for p in result if not (p in seen or seen.add(p))]
    return unique, errors


def load_unit(path: str, stdin_text: str | None = None) -> UnitFile:
    if path == "-":
        text = stdin_text if stdin_text is not None else sys.stdin.read()
        return parse_text(text, "-")
    return parse_file(Path(path))


def lint_paths(paths: Iterable[str], options: LintOptions | None = None) -> Report:
    options = options or LintOptions()
    paths = list(paths)
    inputs, errors = expand_paths(paths)
    # Files a unit names (EnvironmentFile=, a wrapper script) are looked for in the trees
    # given here: a directory, or the directory of a file (linting/local_files.py).
    trees = tuple(dict.fromkeys(str(Path(p).parent) for p in inputs if p != "-"))
    trees = tuple(dict.fromkeys((*trees, *(p for p in paths if Path(p).is_dir()))))
    options = dataclasses.replace(options, trees=(*options.trees, *trees))
    # Files are read as the run goes, so ShellCheck starts on the first units' scripts
    # while later files are still being read (lint_units's first pass).
    report = _lint(_loaded(inputs, errors), options, expected=len(inputs))
    report.input_errors.extend(errors)
    return report


def _loaded(inputs: list[str], errors: list[InputError]) -> Iterator[UnitFile]:
    """The units of `inputs`, read one by one; unreadable files become `errors`."""
    for path in inputs:
        try:
            yield load_unit(path)
        except UnicodeDecodeError as exc:
            errors.append(
                InputError(path, f"not a UTF-8 text file ({exc.reason} at byte {exc.start})")
            )
        except OSError as exc:
            errors.append(InputError(path, exc.strerror or str(exc)))


def lint_text(text: str, name: str = "unit.service", options: LintOptions | None = None) -> Report:
    """Lint one unit given as text (used by the web preview and by tests)."""
    return lint_units([parse_text(text, name)], options or LintOptions())


def lint_units(units: list[UnitFile], options: LintOptions) -> Report:
    return _lint(units, options, expected=len(units))


def _lint(units: Iterable[UnitFile], options: LintOptions, expected: int) -> Report:
    """Two passes. The first reads each unit's Exec lines and hands its scripts to
    ShellCheck at once (it then works on every core from the first units on); the second
    runs the Python rules while ShellCheck is still busy. The scripts still waiting when
    the first pass ends are dealt out in shrinking batches (`ShellCheckPool.finish`), so
    that no core sits idle at the end."""
    rules = [r for r in all_rules() if _active(r.code, options) and _released(r, options)]
    shellcheck = options.shellcheck and any(r.code == "SC" for r in rules)
    pool = ShellCheckPool(expected=expected) if shellcheck else None
    with pool or nullcontext():
        contexts: list[UnitContext] = []
        jobs: list[ShellCheckJob] = []
        for unit in units:
            ctx = UnitContext(unit, options)
            contexts.append(ctx)
            if pool is not None:
                jobs += (
                    ShellCheckJob(ctx, path, script, pool.submit(script))
                    for path, script in ctx.shell_scripts
                )
        if not contexts:
            return Report()
        if pool is not None:
            pool.finish()
        run = RunContext(contexts, options, jobs)
        found: dict[int, list[Finding]] = {}
        for index, ctx in enumerate(contexts, start=1):
            found[id(ctx)] = _unit_findings(ctx, rules)
            if pool is not None and index % SETTLE_EVERY == 0:
                pool.settle_finished()
        for rule in cross_unit_order(rules):
            for ctx, hit in rule.check_run(run) if rule.check_run else ():
                found[id(ctx)].append(finding(rule, ctx, hit))
    return _report(contexts, found, {r.code: r for r in rules})


def cross_unit_order(rules: Iterable[Rule]) -> list[Rule]:
    """The rules that look at the whole run, ShellCheck's last: it waits for the last
    batch, and the others can run while ShellCheck still works. (Findings are sorted
    per file afterwards, so the order does not show in the report.)"""
    return sorted((r for r in rules if r.check_run), key=lambda r: r.code == "SC")


def _unit_findings(ctx: UnitContext, rules: list[Rule]) -> list[Finding]:
    return [finding(rule, ctx, hit) for rule in rules if rule.check for hit in rule.check(ctx)]


def _report(
    contexts: list[UnitContext], found: dict[int, list[Finding]], active: dict[str, Rule]
) -> Report:
    report = Report()
    for ctx in contexts:
        findings = _without_knock_ons(_filter(ctx, found[id(ctx)], set(active)), active)
        file_report = FileReport(
            ctx.unit.path, findings, _commands(ctx), dict(ctx.unit.sources), _versions(ctx)
        )
        report.files.append(file_report)
    # findings a cross-file check attached to one unit but that belong to another file
    by_path = {fr.path: fr for fr in report.files}
    for fr in list(report.files):
        for f in list(fr.findings):
            owner = _owner(f, by_path)
            if owner is not fr:
                fr.findings.remove(f)
                owner.findings.append(f)
    for fr in report.files:
        fr.findings.sort(key=lambda f: f.sort_key)
    return report


def _without_knock_ons(findings: list[Finding], rules: dict[str, Rule]) -> list[Finding]:
    """Drop a finding that only repeats the consequence of another one at the same place
    (a rule's `supersedes`): `${PORT:-8000}` is reported once, as the cause."""
    causes = [(f, rules[f.code].supersedes) for f in findings if f.code in rules]
    causes = [(f, codes) for f, codes in causes if codes]
    if not causes:
        return findings
    return [
        f
        for f in findings
        if not any(
            _named(f.code, codes)
            and any(
                f.path == path and _overlap(f.span, span)
                for path, span in ((cause.path, cause.span), *cause.related)
            )
            for cause, codes in causes
        )
    ]


def _named(code: str, codes: tuple[str, ...]) -> bool:
    """Is `code` one of `codes`? `SC` there stands for every ShellCheck code."""
    return code in codes or ("SC" in codes and code[:2] == "SC" and code[2:].isdigit())


def _overlap(a: Span, b: Span) -> bool:
    return a.start < b.end and b.start < a.end


def finding(rule: Rule, ctx: UnitContext, hit: Hit) -> Finding:
    """A check's hit as a finding: the rule supplies code, name and severity."""
    return Finding(
        code=hit.code or rule.code,
        name=hit.name or rule.name,
        severity=hit.severity or rule.severity,
        span=hit.span,
        message=hit.message,
        path=hit.path or ctx.unit.path,
        fix=hit.fix,
        data=hit.data or {},
        related=hit.related,
    )


def _released(rule: Rule, options: LintOptions) -> bool:
    """A rule in preview runs only with `--preview`, or when --select names its code
    exactly (as ruff's preview rules)."""
    if rule.status is not PREVIEW or options.preview:
        return True
    return rule.code in (p.upper() for p in options.select)


def _active(code: str, options: LintOptions) -> bool:
    """Is a rule on? The ShellCheck runner ("SC") is on whenever any SC code may be: all
    of them (`--select S`, `SC`, `ALL` or no --select) or one named in --select."""
    if code == "SC":
        named = (p.upper() for p in options.select if p.upper().startswith("SC"))
        return any(selected(c, options.select, options.ignore) for c in ("SC", *named))
    return selected(code, options.select, options.ignore)


def _owner(finding: Finding, by_path: dict[str, FileReport]) -> FileReport:
    if finding.path in by_path:
        return by_path[finding.path]
    for fr in by_path.values():
        if finding.path in fr.sources:
            return fr
    return next(iter(by_path.values()))


def _filter(ctx: UnitContext, findings: list[Finding], active: set[str]) -> list[Finding]:
    result: list[Finding] = []
    seen: set[tuple] = set()
    for f in findings:
        dynamic = f.code.startswith("SC")  # ShellCheck's own codes are not in the catalog
        if not (f.code in active or dynamic) or not selected(
            f.code, ctx.options.select, ctx.options.ignore
        ):
            continue
        if ctx.unit.is_disabled(f.code, f.span, f.path):
            continue
        key = (f.code, f.path, f.span, f.message)
        if key in seen:
            continue
        seen.add(key)
        result.append(f)
    return result


def _versions(ctx: UnitContext) -> list[VersionInfo]:
    found = [
        VersionInfo(
            vc.version.requested,
            vc.version.catalog.version,
            vc.version.source,
            vc.version.note,
            vc.version.assumed,
        )
        for vc in ctx.vllm_commands
    ]
    return list(dict.fromkeys(found))


def _commands(ctx: UnitContext) -> list[CommandInfo]:
    return [
        CommandInfo(
            section="Service",
            key=c.key,
            line=c.assignment.line,
            prefixes=c.command.prefixes,
            path=c.command.path,
            argv=tuple(c.argv),
            file=c.assignment.path,
        )
        for c in ctx.commands
    ]
