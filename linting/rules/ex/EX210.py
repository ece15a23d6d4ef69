from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.execline.env_substitution import is_whole_word_reference
from linting.findings import Hit, Severity
from linting.rules.registry import rule

_KNOCK_ONS = ("VL320", "VL321", "VL323", "VL326", "VL328", "VL330")
# `$$` and `${` are skipped whole; otherwise the `$` and the word characters after it
# (`\w`: str.isalnum() or `_`, the characters of a name).
_DOLLAR = re.compile(r"\$(?:[${]|(\w*))")


@rule("EX210", Severity.ERROR, supersedes=_KNOCK_ONS)
def braceless_variable_inside_word(ctx: UnitContext) -> Iterator[Hit]:
    """
    A braceless `$VAR` inside a longer Exec argument, which systemd passes literally.

    What it does:
    Finds `$NAME` that is not the whole argument (`-$MAINPID`, `--port=$PORT`,
    `x$HOME`) in Exec arguments that are not shell scripts.

    Why is this bad?
    systemd substitutes `$NAME` only when it is a whole argument; inside a word only
    `${NAME}` is replaced (systemd.service(5), "Command lines"; measured on 252:
    `-$MAINPID` is passed as the five characters `-$MAINPID`). `kill -s HUP -$MAINPID`
    then fails, and `--port=$PORT` gives vLLM the text `$PORT`.

    Example:
    ```ini
    ExecReload=/bin/kill -s HUP -$MAINPID
    ```

    Use instead:
    ```ini
    ExecReload=/bin/kill -s HUP -${MAINPID}
    ```
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        script_word = found[1].word_index if found else -1
        if cmd.command.no_env_expand:
            continue
        for index, word in enumerate(cmd.command.argv):
            text = word.text
            if index == script_word or is_whole_word_reference(text):
                continue
            for offset, name in _braceless(text):
                yield Hit(
                    word.span(offset, offset + 1 + len(name)),
                    f"`${name}` inside the argument `{text}` is passed literally (systemd "
                    f"replaces `$NAME` only as a whole argument): write `${{{name}}}`",
                    path=cmd.assignment.path,
                )


def _braceless(text: str) -> Iterator[tuple[int, str]]:
    """(offset, name) of each `$name` not written as `$$` or `${`."""
    for match in _DOLLAR.finditer(text):
        name = match.group(1)
        if name and not name[0].isdigit():
            yield match.start(), name
