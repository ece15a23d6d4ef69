from __future__ import annotations

from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("EX204", Severity.ERROR)
def unset_braced_variable_becomes_empty(ctx: UnitContext) -> Iterator[Hit]:
    """
    `${NAME}` of an unset variable becomes the empty string.

    What it does:
    Finds `${NAME}` in arguments that are not shell scripts (see EX201 for those) where
    NAME is not set by the unit, or is not a name a variable can have (`${#a[@]}`, `${1}`).

    Why is this bad?
    systemd replaces it with nothing (src/basic/env-util.c `replace_env()`), so
    `--served-model-name=${NAME}` passes `--served-model-name=`. systemd 252 does this
    silently; 254 and later log "Referenced but unset environment variable evaluates to an
    empty string".

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name=${SERVED_NAME}
    ```

    Use instead:
    ```ini
    Environment=SERVED_NAME=kimi-k2.5
    ExecStart=/opt/vllm/bin/vllm serve /models/m --served-model-name=${SERVED_NAME}
    ```
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        script_word = found[1].word_index if found else -1
        for index, sub in cmd.substitutions:
            if not sub.braced or sub.value is not None or index == script_word:
                continue
            if sub.valid_name and ctx.has_unknown_environment:
                continue
            word = cmd.command.argv[index]
            result = word.text[: sub.start] + word.text[sub.end :]
            yield Hit(
                word.span(sub.start, sub.end),
                f"`${{{sub.name}}}` is not set in the unit: systemd replaces it with an empty "
                f"string, so this argument becomes {result!r}",
                path=cmd.assignment.path,
            )
