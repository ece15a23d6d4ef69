from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# A `pkill` command of the script, up to the end of its simple command.
_PKILL = re.compile(r"(?:^|(?<=[;&|\n(]))\s*(pkill\b[^;&|\n)]*)")
# Where a killed shell fails the start; elsewhere only the rest of its script is lost.
_START_KEYS = ("ExecStartPre", "ExecStart", "ExecStartPost", "ExecCondition")


def _full_pattern(command: str) -> str | None:
    """The PATTERN of `pkill … -f|--full … PATTERN`; None without -f or a pattern."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    full, pattern, takes_value = False, None, False
    for word in words[1:]:
        if takes_value:
            takes_value = False
        elif word in ("-f", "--full") or re.fullmatch(r"-[a-eg-zA-Z0-9]*f[a-zA-Z0-9]*", word):
            full = True
        elif word in ("-u", "-U", "-g", "-G", "-P", "-s", "-t", "--signal", "-F"):
            takes_value = True  # options whose value is the next word
        elif not word.startswith("-"):
            pattern = word
            break
    return pattern if full else None


def _matches(pattern: str, text: str) -> bool:
    """pkill's extended regular expression against a command line (Python's re is close
    enough for the literal patterns units use); a pattern with `$` is left alone: the
    shell expands it first."""
    if "$" in pattern:
        return False
    try:
        return re.search(pattern, text) is not None
    except re.error:
        return False


@rule("OP411", Severity.ERROR)
def pkill_full_matches_its_own_shell(ctx: UnitContext) -> Iterator[Hit]:
    """
    `pkill -f PATTERN` in a `bash -c` script kills the shell that runs it.

    What it does:
    Finds `pkill -f PATTERN` (or `--full`) in the shell scripts of Exec lines and checks
    whether PATTERN matches the command line of the shell itself (`/bin/bash -c '…'`,
    which contains the pattern as written).

    Why is this bad?
    `-f` matches the full command line of every process, and procps' pkill skips only
    its own process, not the shell that started it (pkill(1): "will never report/kill
    itself"). The shell receives SIGTERM: `bash -c 'pkill -f "vllm serve"; echo ok'`
    ends with status 143 and `ok` is never printed, whatever `|| true` follows. In
    `ExecStartPre=` the start then fails ("control process exited, code=killed,
    status=15/TERM"); in a stop command the rest of the script does not run.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'pkill -f "vllm serve" || true; sleep 5'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'pkill -f "[v]llm serve" || true'
    ```
    (the bracket matches `vllm serve` but not its own text), or let systemd stop the
    old service (`KillMode=control-group`) and check the GPUs instead.
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        if found is None:
            continue
        script = found[1].value
        own_command_line = " ".join(cmd.argv)
        for m in _PKILL.finditer(script.text):
            pattern = _full_pattern(m.group(1))
            if pattern is None or not _matches(pattern, own_command_line):
                continue
            at_start = cmd.key in _START_KEYS
            yield Hit(
                script.span(m.start(1), m.end(1)),
                f"`pkill -f {shlex.quote(pattern)}` kills the shell that runs it too (its own command "
                "line contains the pattern): "
                + (
                    f"{cmd.key} ends with SIGTERM and the start fails"
                    if at_start
                    else "the rest of the script does not run"
                )
                + "; write the pattern so it cannot match itself (`[v]llm`)",
                path=cmd.assignment.path,
                severity=None if at_start else Severity.WARNING,
            )
