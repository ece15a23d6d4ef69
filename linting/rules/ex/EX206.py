from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.ex._text import shown
from linting.rules.registry import rule


@rule("EX206", Severity.ERROR)
def nested_quotes_removed(ctx: UnitContext) -> Iterator[Hit]:
    """
    Quotes nested inside quotes of the same kind close the outer quote.

    What it does:
    Finds one argument that was written as two or more quoted stretches of the same quote
    kind joined by unquoted text, e.g. `"nvidia-smi --format="csv,noheader""`.

    Why is this bad?
    systemd's word splitting (src/basic/extract-word.c) has no nesting: the inner `"`
    closes the outer quote. The inner quotes disappear, and a blank between them splits
    the argument in two, so the program receives something other than written.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c "test -z "$(pgrep -f 'vllm serve')""
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'test -z "$(pgrep -f \\'vllm serve\\')"'
    ```
    Use the other quote kind outside, or escape inner quotes as `\\"`.
    """
    for _key, assignment, line in ctx.exec_lines:
        text = assignment.value.text
        for command in line.commands:
            words = command.words
            for i, word in enumerate(words):
                for region in word.quotes:
                    after = region.close + 1
                    inner = text[region.open + 1 : region.close]
                    # The outer quote closed where an inner one was meant to open: the
                    # quoted text ends in a blank, `=` or `(` and the word goes on unquoted.
                    if after >= word.end or text[after] in "'\"" or not inner:
                        continue
                    if inner[-1] not in " \t=(":
                        continue
                    received = [w.value.text for w in words[i:]]
                    yield Hit(
                        assignment.value.span(region.open, word.end),
                        f"the {region.quote} before `{shown(text[after : word.end], 40)}` closes "
                        f"the outer quote instead of opening an inner one; the quotes inside "
                        f"are dropped and the program receives {shown(repr(received), 200)}",
                        {"argv": received},
                        path=assignment.path,
                    )
                    break
