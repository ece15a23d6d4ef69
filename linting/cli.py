"""`lintunits` command line (also behind `python manage.py lintunits`).

Exit codes: 0 nothing at or above --fail-on; 1 findings; 2 usage or unreadable input.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn, TextIO

from linting.config import ConfigError, load_config
from linting.engine import lint_paths
from linting.findings import Severity
from linting.fixes import fixed_texts, unified_diff
from linting.gc_tuning import collector_paused
from linting.options import LintOptions
from linting.report import Report
from linting.reporters import FORMATS, render
from linting.rules.docs import explain, list_rules_json, list_rules_text
from linting.rules.registry import all_rules, removed_codes
from linting.shell import diskcache
from linting.systemd.catalog import UnknownSystemdVersion, load_catalog
from linting.vllm.catalog import UnknownVllmVersion, choose_catalog

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # argparse prints usage and exits 2: keep that
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def build_parser(prog: str = "lintunits") -> argparse.ArgumentParser:
    p = _Parser(
        prog=prog,
        description="Lint systemd units that run vLLM: what systemd and vLLM would really do.",
    )
    p.add_argument(
        "paths",
        nargs="*",
        metavar="PATH|DIR|GLOB|-",
        help="unit files, directories, globs, or - for standard input",
    )
    p.add_argument("--format", choices=FORMATS, default=None, help="report format (text)")
    p.add_argument(
        "--systemd-version",
        type=int,
        default=None,
        metavar="N",
        help="systemd version to model (default 252)",
    )
    p.add_argument(
        "--vllm-version",
        default=None,
        metavar="X.Y.Z",
        help="vLLM release to model (default: what each command shows — an image tag, a "
        "versioned venv path — else [tool.lintunits] vllm-version, a vllm== pin of the "
        "project, else the newest catalog, which the summary then says)",
    )
    p.add_argument(
        "--select",
        action="append",
        default=None,
        metavar="CODES",
        help="only these rule codes or prefixes (comma-separated)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=None,
        metavar="CODES",
        help="skip these rule codes or prefixes (comma-separated)",
    )
    p.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        default=None,
        help="lowest severity that makes the exit code 1 (error)",
    )
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--diff", action="store_true", help="print safe fixes as a diff, change nothing")
    p.add_argument(
        "--show-argv",
        action="store_true",
        help="print the exact argv systemd passes for every Exec command",
    )
    p.add_argument(
        "--no-shellcheck", action="store_true", help="skip ShellCheck on bash -c scripts"
    )
    p.add_argument(
        "--env-file",
        action="append",
        default=None,
        metavar="HOST_PATH=LOCAL_PATH",
        help="read EnvironmentFile=HOST_PATH from LOCAL_PATH (repeatable)",
    )
    p.add_argument(
        "--script-root",
        action="append",
        default=None,
        metavar="DIR",
        help="a directory that mirrors the host's / : wrapper scripts and env files are "
        "looked up under it (repeatable)",
    )
    p.add_argument(
        "--same-host",
        action="append",
        default=None,
        metavar="PATHS",
        help="units that run on one machine (comma-separated files, directories or globs; "
        "repeatable); units of one directory always count as one machine",
    )
    p.add_argument(
        "--user-unit",
        action="append",
        nargs="?",
        const="*",
        default=None,
        metavar="PATHS",
        help="units run by `systemctl --user` (comma-separated files, directories or globs; "
        "none: every unit): %%h is that user's home, %%u their name, nothing runs as root",
    )
    p.add_argument(
        "--preview",
        action="store_true",
        default=None,
        help="also run the rules in preview (new rules whose findings may still change)",
    )
    p.add_argument("--list-rules", action="store_true", help="list every rule and exit")
    p.add_argument("--explain", metavar="CODE", help="explain one rule and exit")
    p.add_argument("--config", metavar="PYPROJECT", help="read [tool.lintunits] from this file")
    return p


def _codes(values: Sequence[str] | None, where: str = "") -> tuple[str, ...]:
    """Upper-cased codes; one that names no rule is a usage error: a typo would otherwise
    select nothing (or ignore nothing) and the run would pass in silence."""
    codes = tuple(c.strip().upper() for v in values or () for c in v.split(",") if c.strip())
    known = [rule.code for rule in all_rules()]
    for code in removed_codes(codes):
        raise UsageError(f"{where}: {code} was removed (codes are never reused; see --list-rules)")
    for code in codes:
        shellcheck = re.fullmatch(r"SC\d*", code) is not None  # ShellCheck's own SC#### too
        if code != "ALL" and not shellcheck and not any(k.startswith(code) for k in known):
            raise UsageError(
                f"{where}: {code!r} is no rule code, family or prefix (see --list-rules)"
            )
    return codes


def _options(args: argparse.Namespace, config: dict) -> tuple[LintOptions, str]:
    systemd_version = args.systemd_version or config.get("systemd-version")
    configured_vllm = config.get("vllm-version")
    try:
        if systemd_version is not None:
            load_catalog(int(systemd_version))
        for release in (args.vllm_version, configured_vllm):
            if release is not None:
                choose_catalog(str(release))  # a release without a catalog is fine
    except (UnknownSystemdVersion, UnknownVllmVersion, ValueError) as exc:
        raise UsageError(str(exc)) from None
    fail_on = args.fail_on or config.get("fail-on", "error")
    fmt = args.format or config.get("format", "text")

    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r} (use {', '.join(FORMATS)})")
    try:
        severity = Severity.parse(str(fail_on))
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    options = LintOptions(
        env_files=_env_files(args.env_file, config),
        script_roots=tuple(args.script_root or ()) + tuple(config.get("script-roots", ())),
        same_host=tuple(
            tuple(p.strip() for p in group.split(",") if p.strip())
            for group in args.same_host or ()
        )
        + tuple(tuple(group) for group in config.get("same-host", ())),
        user_units=tuple(
            p.strip() for entry in args.user_unit or () for p in entry.split(",") if p.strip()
        )
        + tuple(config.get("user-units", ())),
        systemd_version=int(systemd_version) if systemd_version is not None else None,
        vllm_version=args.vllm_version,
        vllm_version_default=str(configured_vllm) if configured_vllm is not None else None,
        select=_codes(args.select, "--select")
        if args.select is not None
        else _codes(config.get("select"), "[tool.lintunits] select"),
        ignore=_codes(args.ignore, "--ignore")
        + _codes(config.get("ignore"), "[tool.lintunits] ignore"),
        fail_on=severity,
        shellcheck=not args.no_shellcheck and bool(config.get("shellcheck", True)),
        preview=bool(args.preview if args.preview is not None else config.get("preview", False)),
    )
    return options, fmt


def _env_files(given: Sequence[str] | None, config: dict) -> tuple[tuple[str, str], ...]:
    """`--env-file HOST_PATH=LOCAL_PATH` entries, then `[tool.lintunits] env-files`."""
    pairs = []
    for entry in given or ():
        host, eq, local = entry.partition("=")
        if not eq or not host.startswith("/") or not local:
            raise UsageError(
                f"--env-file {entry!r}: expected HOST_PATH=LOCAL_PATH with an absolute "
                "HOST_PATH (as written in EnvironmentFile=)"
            )
        pairs.append((host, local))
    pairs += list(config.get("env-files", {}).items())
    return tuple(pairs)


LintFunction = Callable[[list[str], LintOptions], Report]


def run(
    argv: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
    prog: str = "lintunits",
    *,
    source: LintFunction | None = None,
    source_name: str = "",
) -> int:
    """Run the command. `source` replaces file linting (e.g. stored profiles: the
    positional arguments are then names, and none means all)."""
    try:
        # The command owns its process: no cyclic collection during the run (gc_tuning.py).
        with collector_paused():
            return _run(argv, stdout, stderr, prog, source=source, source_name=source_name)
    except (KeyboardInterrupt, SystemExit, BrokenPipeError):
        raise
    except Exception as exc:
        # A bug of ours must not look like findings (exit 1) or pass (exit 0) in someone's
        # CI: exit 2 with one clear line; LINTUNITS_DEBUG=1 shows the traceback.
        if os.environ.get("LINTUNITS_DEBUG"):
            raise
        where = exc.__traceback__
        while where is not None and where.tb_next is not None:
            where = where.tb_next
        location = (
            f" ({where.tb_frame.f_code.co_filename}:{where.tb_lineno})" if where is not None else ""
        )
        stderr.write(
            f"{prog}: internal error: {type(exc).__name__}: {exc}{location}; "
            "this is a bug in lintunits — set LINTUNITS_DEBUG=1 for the traceback\n"
        )
        return EXIT_USAGE


def _run(
    argv: Sequence[str],
    stdout: TextIO,
    stderr: TextIO,
    prog: str,
    *,
    source: LintFunction | None,
    source_name: str,
) -> int:
    args = build_parser(prog).parse_args(list(argv))
    try:
        if args.explain or args.list_rules:
            stdout.write(_catalog_text(args) + "\n")
            return EXIT_OK
        options, fmt = _options(args, load_config(args.config).values)
        _check_inputs(args, source, source_name)
    except (ConfigError, UsageError) as exc:
        stderr.write(f"{prog}: error: {exc}\n")
        return EXIT_USAGE
    if source is not None:
        report = source(list(args.paths), options)
    elif args.diff:
        return _show_diff(lint_paths(args.paths, options), stdout)
    else:
        report = lint_paths(args.paths, options)
        if args.fix:
            report = _apply_fixes(report, args.paths, options, stderr)
    stdout.write(render(report, fmt, show_argv=args.show_argv, rules=all_rules()))
    _input_errors_to_stderr(report, fmt, prog, stderr)
    return report.exit_code(options.fail_on)


def _catalog_text(args: argparse.Namespace) -> str:
    """`--explain CODE` or `--list-rules`."""
    if args.explain:
        try:
            return explain(args.explain)
        except LookupError:
            raise UsageError(f"unknown rule code {args.explain!r} (see --list-rules)") from None
    rules = all_rules()
    return list_rules_json(rules) if args.format == "json" else list_rules_text(rules)


def _check_inputs(args: argparse.Namespace, source: LintFunction | None, source_name: str) -> None:
    if source is not None:
        if args.fix or args.diff:
            raise UsageError(f"--fix/--diff work on files, not on {source_name}")
        return
    if not args.paths:
        raise UsageError("no input (give unit files, directories, globs or -)")
    if args.fix and "-" in args.paths:
        raise UsageError("--fix cannot write to standard input; use --diff")


def _show_diff(report: Report, stdout: TextIO) -> int:
    """`--diff`: the safe fixes as a unified diff; exit 1 when there is one."""
    texts = {p: s.text for fr in report.files for p, s in fr.sources.items()}
    changed = fixed_texts(report.findings, texts)
    for path, new in sorted(changed.items()):
        stdout.write(unified_diff(path, texts[path], new))
    return EXIT_FINDINGS if changed else EXIT_OK


def _apply_fixes(report: Report, paths: list[str], options: LintOptions, stderr: TextIO) -> Report:
    """`--fix`: write the safe fixes, then lint again for what is left."""
    texts = {p: s.text for fr in report.files for p, s in fr.sources.items()}
    changed = fixed_texts(report.findings, texts)
    for path, new in changed.items():
        Path(path).write_text(new, encoding="utf-8")
    if not changed:
        return report
    stderr.write(f"fixed {len(changed)} file(s)\n")
    return lint_paths(paths, options)


def _input_errors_to_stderr(report: Report, fmt: str, prog: str, stderr: TextIO) -> None:
    """Machine formats carry input errors in the report; say them on stderr as well."""
    if fmt == "text":
        return
    for error in report.input_errors:
        stderr.write(f"{prog}: error: {error.path}: {error.message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
        sys.stdout.flush()
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return EXIT_OK
    return code


def run_and_exit() -> NoReturn:
    """The `lintunits` command: `main()`, then out of the process without tearing the
    interpreter down. A run keeps every unit, word and finding to the end, and freeing them
    one by one at exit took ~40 ms after the report was written (1,000 units), in which
    nothing else happens. As mypy does (mypy/util.py `hard_exit`): flush both streams, then
    `os._exit`. The run has closed ShellCheck's threads and temp directory; the result
    cache's connection is closed here, so SQLite leaves no write-ahead log behind."""
    code = main()
    diskcache.close()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:  # the reader went away (`lintunits … | head`)
        pass
    os._exit(code)


if __name__ == "__main__":
    run_and_exit()
