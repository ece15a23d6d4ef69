from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import load_word, shell_script
from linting.context import UnitContext
from linting.findings import Edit, Fix, Hit, Severity
from linting.rules.registry import rule


@rule("EX203", Severity.ERROR, fix="safe")
def braced_variable_stays_one_argument(ctx: UnitContext) -> Iterator[Hit]:
    """
    `${ARGS}` holding several flags is passed as ONE argument.

    What it does:
    Finds a whole argument `${NAME}` (outside shell scripts) whose value contains blanks.

    Why is this bad?
    `${NAME}` is replaced by the exact value as a single argument; only a bare `$NAME`
    word is split on whitespace (systemd.service(5), "Command lines"). vLLM then receives
    `--max-num-seqs 8 --enforce-eager` as one unknown argument and refuses to start.

    Example:
    ```ini
    Environment="EXTRA=--max-num-seqs 8 --enforce-eager"
    ExecStart=/opt/vllm/bin/vllm serve /models/m ${EXTRA}
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m $EXTRA
    ```
    The fix removes the braces (safe: the argument is exactly the variable).
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        script_word = found[1].word_index if found else -1
        for index, sub in cmd.substitutions:
            if not sub.braced or sub.value is None or index == script_word:
                continue
            word = cmd.command.argv[index]
            if sub.start != 0 or sub.end != len(word.text) or not re.search(r"\s", sub.value):
                continue
            raw = load_word(cmd, index)
            fix = None
            span = word.span()
            text = ctx.unit.text_at(cmd.assignment.path, span)
            if text == "${" + sub.name + "}" and raw.value.text == text:
                fix = Fix(f"Use `${sub.name}`", (Edit(span, "$" + sub.name),))
            yield Hit(
                span,
                f"`${{{sub.name}}}` is passed as one argument {sub.value!r}; write "
                f"`${sub.name}` (no braces) to split it into "
                f"{len(sub.value.split())} arguments",
                path=cmd.assignment.path,
                fix=fix,
            )
