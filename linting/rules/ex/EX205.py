from __future__ import annotations

from collections.abc import Iterator

from linting.commands import load_word, shell_script
from linting.context import UnitContext
from linting.execline.env_substitution import displayed
from linting.execline.specifiers import find_specifiers
from linting.findings import Fix, Hit, Severity
from linting.rules.ex._text import insert_at, shown
from linting.rules.registry import rule

_FORMAT_LETTERS = set("sdHMmSYybBaAjuUwWTtVgGhlnNpiIfcCEL")


@rule("EX205", Severity.ERROR, fix="safe")
def specifier_in_shell_script(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `%` conversion in a shell script is a systemd specifier.

    What it does:
    Finds `%X` inside `bash -c` scripts (and in arguments of `date` and `printf`) where X
    is a letter systemd resolves, such as `%s`, `%d`, `%H`, `%m`.

    Why is this bad?
    systemd resolves specifiers in every Exec word when it loads the unit
    (src/shared/specifier.c): `date +%s` becomes `date +/bin/bash` on Debian (`%s` is root's
    shell), `printf '%d'` receives the credentials directory. Nothing warns.

    Example:
    ```ini
    ExecStartPre=/bin/bash -c 'echo "start $(date +%s)" >> /var/log/vllm-start.log'
    ```

    Use instead:
    ```ini
    ExecStartPre=/bin/bash -c 'echo "start $(date +%%s)" >> /var/log/vllm-start.log'
    ```
    The fix doubles the `%` (`%%` is a literal percent sign).
    """
    for cmd in ctx.commands:
        found = shell_script(cmd)
        targets: list[tuple[int, str]] = []
        if found is not None:
            targets.append((found[1].word_index, found[0].dialect + " script"))
        base = cmd.command.path.rsplit("/", 1)[-1]
        if base in ("date", "printf"):
            targets.extend((i, base) for i in range(1, len(cmd.command.argv)))
        for word_index, where in targets:
            raw = load_word(cmd, word_index)
            received = cmd.command.argv[word_index].text
            if found is not None and word_index == found[1].word_index:
                received = displayed(found[1].value.text)
            for use in find_specifiers(raw.value.text, ctx.version):
                if not use.known or use.letter not in _FORMAT_LETTERS:
                    continue
                pos = raw.value.origins[use.offset]
                span = raw.value.span(use.offset, use.offset + 2)
                edit = insert_at(ctx, pos, cmd.assignment.path, "%", "%")
                value = ctx.specifiers.get(use.letter, "")
                yield Hit(
                    span,
                    f"`%{use.letter}` is a systemd specifier: it becomes {value!r} before the "
                    f"{where} runs (it receives `{shown(received)}`); write `%%{use.letter}` "
                    "for a literal percent sign",
                    path=cmd.assignment.path,
                    fix=Fix(f"Escape as `%%{use.letter}`", (edit,)) if edit else None,
                )
