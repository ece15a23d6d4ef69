from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# `${NAME:-word}` and the other shell forms (`:=`, `:+`, `:?`, and without the colon).
_SHELL_FORM = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(:?[-=+?])([^}]*)\}")
# What a literal `${PORT:-8000}` becomes in vLLM's eyes.
_KNOCK_ONS = ("VL301", "VL320", "VL321", "VL322", "VL323", "VL326", "VL328", "VL330")


@rule("EX209", Severity.ERROR, supersedes=_KNOCK_ONS)
def shell_default_in_exec_line(ctx: UnitContext) -> Iterator[Hit]:
    """
    `${VAR:-default}` (or `:=`, `:+`, `:?`) in an Exec argument: systemd has no defaults.

    What it does:
    Finds the shell's parameter-expansion forms in Exec arguments that are not shell
    scripts, and says what the program receives.

    Why is this bad?
    systemd knows only `$NAME` and `${NAME}` (src/basic/env-util.c `replace_env()`): in
    `${PORT:-8000}` the `:` ends the name and the whole text is passed literally (measured
    on 252), so vLLM receives `--port '${PORT:-8000}'` and refuses to start. Without the
    colon (`${PORT-8000}`) the name `PORT-8000` is invalid and the argument becomes empty.
    (vLLM's own complaint about the value is not reported separately.)

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port ${PORT:-8000}
    ```

    Use instead:
    ```ini
    Environment=PORT=8000
    EnvironmentFile=-/etc/vllm/vllm.env
    ExecStart=/opt/vllm/bin/vllm serve /models/m --port ${PORT}
    ```
    (`Environment=` gives the default, the optional file may override it), or
    `/bin/sh -c 'exec vllm serve … --port "$${PORT:-8000}"'`.
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        script_word = found[1].word_index if found else -1
        if cmd.command.no_env_expand:
            continue
        for index, word in enumerate(cmd.command.argv):
            if index == script_word:
                continue
            for match in _SHELL_FORM.finditer(word.text):
                colon = match.group(2).startswith(":")
                if colon:
                    effect = f"the program receives `{match.group(0)}` literally"
                else:
                    effect = (
                        f"`{match.group(1)}{match.group(2)}{match.group(3)}` is not a variable "
                        "name, so systemd replaces it with an empty string"
                    )
                yield Hit(
                    word.span(match.start(), match.end()),
                    f"systemd has no `${{VAR{match.group(2)}…}}` defaults: {effect}; set the "
                    "default with Environment= (an EnvironmentFile= may override it)",
                    path=cmd.assignment.path,
                )
