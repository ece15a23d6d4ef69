from __future__ import annotations

from collections.abc import Iterator

from linting.context import RunContext, UnitContext, shell_script
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.shell.shellcheck import (
    ShellCheckFailed,
    ShellCheckUnavailable,
    ShellScript,
    check_scripts,
    dialect_for,
)

_LEVELS = {
    "error": Severity.ERROR,
    "warning": Severity.WARNING,
    "info": Severity.INFO,
    "style": Severity.INFO,
}


@rule("SC", Severity.WARNING, per_run=True)
def shellcheck(run: RunContext) -> Iterator[tuple[UnitContext, Hit]]:
    """
    ShellCheck's findings (`SC####`) in scripts embedded in Exec lines.

    What it does:
    For every `bash|sh|dash|ksh … -c SCRIPT` command, runs ShellCheck on SCRIPT exactly as
    the shell receives it (after systemd's unquoting, escapes, `%` specifiers and `$`
    substitution), with the unit's `Environment=` names declared, and reports ShellCheck's
    own codes at the right place in the unit file. ShellCheck levels map to severities:
    error → error, warning → warning, info/style → info. All scripts of a run are checked
    in one ShellCheck process.

    Why is this bad?
    A pre-start check that is wrong in the shell fails or, worse, passes when it should
    not; the unit file hides it inside one long quoted line.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'for pid in $$(pgrep -f vllm); do kill $$pid; done'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'pgrep -f vllm | xargs -r kill'
    ```
    See https://www.shellcheck.net/wiki/ for each code.
    """
    if not run.options.shellcheck:
        return
    jobs: list[tuple[UnitContext, str, ShellScript]] = []
    for ctx in run.units:
        for cmd in ctx.commands:
            found = shell_script(cmd)
            if found is None:
                continue
            shell, arg = found
            # `mksh` is a shell we recognise but not a ShellCheck dialect: check it as ksh.
            dialect = dialect_for(shell.dialect)
            if dialect is None:
                continue
            exported = tuple(sorted(ctx.environment))
            jobs.append((ctx, cmd.assignment.path, ShellScript(arg.value, dialect, exported)))
    if not jobs:
        return
    try:
        results = check_scripts([job[2] for job in jobs])
    except (ShellCheckUnavailable, ShellCheckFailed) as exc:
        # One note instead of a crash of the whole lint run (the other rules' findings
        # still matter); it says the scripts went unchecked and why.
        ctx, path, _ = jobs[0]
        what = "is not available" if isinstance(exc, ShellCheckUnavailable) else "failed"
        yield (
            ctx,
            Hit(
                ctx.unit.headers[0].span if ctx.unit.headers else jobs[0][2].text.span(),
                f"ShellCheck {what}, embedded scripts were not checked: {exc}",
                path=path,
                severity=Severity.INFO,
                name="shellcheck-unavailable",
            ),
        )
        return
    for (ctx, path, _script), findings in zip(jobs, results, strict=True):
        for f in findings:
            yield (
                ctx,
                Hit(
                    f.span,
                    f"{f.message} (ShellCheck, script line {f.script_line})",
                    path=path,
                    severity=_LEVELS.get(f.level, Severity.INFO),
                    code=f.code,
                    name="shellcheck",
                ),
            )
