from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.execline.env_substitution import displayed
from linting.findings import Fix, Hit, Severity
from linting.rules.ex._text import insert_at, shown
from linting.rules.registry import rule

_ASSIGNED = r"(?:^|[\s;&|(])(?:local\s+|export\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?{name}="


_READ = r"\bread\b[^;&|\n]*\b{name}\b"


_FOR = r"\bfor\s+{name}\s+in\b"


def _script_defines(script: str, name: str) -> bool:
    """Does the shell script itself give `name` a value (so `${name}` was meant for it)?"""
    escaped = re.escape(name)
    return any(re.search(p.format(name=escaped), script) for p in (_ASSIGNED, _READ, _FOR))


@rule("EX201", Severity.ERROR, fix="safe")
def shell_variable_expanded_by_systemd(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `${VAR}` meant for the shell in a `bash -c` script is replaced by systemd first.

    What it does:
    Finds `${NAME}` inside the script of `bash|sh|dash|zsh|ksh -c SCRIPT` Exec commands
    where NAME is not set by the unit (`Environment=`, `EnvironmentFile=`) or is assigned by
    the script itself.

    Why is this bad?
    systemd expands `${NAME}` anywhere in an Exec argument before the shell starts
    (systemd.service(5), "Command lines"; src/basic/env-util.c `replace_env()`). An unset
    variable becomes the empty string, so `[ "${free}" -lt 1000 ]` reaches bash as
    `[ "" -lt 1000 ]` and the check silently misbehaves. If the unit does set NAME, the
    script sees the unit's value, not the one it assigned.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'free=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1); [ "${free}" -lt 1000 ]'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'free=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | sort -n | tail -1); [ "$${free}" -lt 1000 ]'
    ```
    `$$` is how a unit file writes a literal `$`. The fix doubles the `$` (safe: the
    variable is unset in the unit, so the meaning cannot be systemd's).
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        if found is None:
            continue
        shell, script_arg = found
        script = displayed(script_arg.value.text)
        word = cmd.command.argv[script_arg.word_index]
        for index, sub in cmd.substitutions:
            if index != script_arg.word_index or not sub.braced:
                continue
            span = word.span(sub.start, sub.end)
            ref = "${" + sub.name + "}"
            if sub.value is None:
                if ctx.has_unknown_environment:
                    continue
                fix_edit = insert_at(ctx, word.origins[sub.start], cmd.assignment.path, "$", "$")
                yield Hit(
                    span,
                    f"systemd replaces `{ref}` with an empty string before {shell.dialect} "
                    f"runs (not set in the unit); {shell.dialect} receives: "
                    f"`{shown(script)}`. Write `$${ref[1:]}` to pass it to the shell.",
                    {"argv": cmd.argv},
                    path=cmd.assignment.path,
                    fix=Fix(f"Escape as `$${ref[1:]}`", (fix_edit,)) if fix_edit else None,
                )
            elif _script_defines(script, sub.name):
                yield Hit(
                    span,
                    f"the script assigns {sub.name} itself, but systemd already replaced "
                    f"`{ref}` with the unit's value {sub.value!r}; write `$${ref[1:]}` if "
                    "the shell's value was meant",
                    path=cmd.assignment.path,
                    severity=Severity.WARNING,
                )
