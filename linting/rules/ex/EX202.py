from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.ex._text import shown
from linting.rules.registry import rule


@rule("EX202", Severity.ERROR)
def unset_variable_removes_argument(ctx: UnitContext) -> Iterator[Hit]:
    """
    A whole-word `$NAME` whose variable is unset (or not a valid name) vanishes from argv.

    What it does:
    Finds arguments that consist of exactly `$NAME` where NAME is not set by the unit, or
    where NAME is not a valid variable name (`$1`, `$FOO/bin`, `$(seq`). An error when the
    name can never be set or when the word is the value of the option before it; a warning
    otherwise (an optional `$OPTS` hook filled by a drop-in is a known idiom).

    Why is this bad?
    For a whole-word `$NAME`, systemd splits the value into arguments; when there is no
    value the word is removed (src/basic/env-util.c `replace_env_argv()`), so every later
    argument shifts one place. `--model $MODEL` with MODEL unset makes `--model` take the
    next flag as its value.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve $MODEL --port 8000
    ```

    Use instead:
    ```ini
    Environment=MODEL=/models/kimi-k2.5-int4
    ExecStart=/opt/vllm/bin/vllm serve $MODEL --port 8000
    ```
    """
    for cmd in ctx.commands:
        for index, sub in cmd.substitutions:
            if sub.braced or sub.value is not None:
                continue
            if sub.valid_name and ctx.has_unknown_environment:
                continue
            word = cmd.command.argv[index]
            previous = cmd.command.argv[index - 1].text if index > 0 else ""
            takes_value = previous.startswith("-") and "=" not in previous
            if sub.valid_name:
                reason = "is not set in the unit"
                severity = Severity.ERROR if takes_value else Severity.WARNING
            else:
                reason = "is not a valid variable name, so it is never set"
                severity = Severity.ERROR
            consequence = (
                f"; `{previous}` then takes the next argument as its value" if takes_value else ""
            )
            yield Hit(
                word.span(),
                f"`${sub.name}` {reason}: systemd removes this argument{consequence}; the "
                f"program receives {shown(repr(cmd.argv))}",
                {"argv": cmd.argv},
                path=cmd.assignment.path,
                severity=severity,
            )
