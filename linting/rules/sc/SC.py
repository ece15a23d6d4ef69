from __future__ import annotations

from collections.abc import Iterator

from linting.context import RunContext, UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.shell.scripts import ShellCheckFailed, ShellCheckUnavailable

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
    error → error, warning → warning, info/style → info. The scripts of a run are checked
    in batches, one ShellCheck process per core, while the other rules run.

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
    jobs = run.shellcheck_jobs
    try:
        results = [job.check.result() for job in jobs]
    except (ShellCheckUnavailable, ShellCheckFailed) as exc:
        # One note instead of a crash of the whole lint run (the other rules' findings
        # still matter); it says the scripts went unchecked and why.
        first = jobs[0]
        headers = first.unit.unit.headers
        what = "is not available" if isinstance(exc, ShellCheckUnavailable) else "failed"
        yield (
            first.unit,
            Hit(
                headers[0].span if headers else first.script.text.span(),
                f"ShellCheck {what}, embedded scripts were not checked: {exc}",
                path=first.path,
                severity=Severity.INFO,
                name="shellcheck-unavailable",
            ),
        )
        return
    for job, findings in zip(jobs, results, strict=True):
        for f in findings:
            yield (
                job.unit,
                Hit(
                    f.span,
                    f"{f.message} (ShellCheck, script line {f.script_line})",
                    path=job.path,
                    severity=_LEVELS.get(f.level, Severity.INFO),
                    code=f.code,
                    name="shellcheck",
                ),
            )
