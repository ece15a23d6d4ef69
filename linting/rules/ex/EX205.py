from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import Command, load_word, shell_script
from linting.context import UnitContext
from linting.execline.env_substitution import displayed
from linting.execline.extract_word import Word
from linting.execline.specifiers import find_specifiers
from linting.findings import Fix, Hit, Severity
from linting.rules.ex._text import insert_at, shown
from linting.rules.registry import rule

_FORMAT_LETTERS = set("sdHMmSYybBaAjuUwWTtVgGhlnNpiIfcCEL")
# Where the text before a `%` shows a format was meant: a `date +FORMAT` word, printf's
# format (the shell builtin, awk's), strftime's; the author then wanted date's or printf's
# conversion, never systemd's value, and doubling the `%` gives exactly that.
_SEPARATOR = r"(?:^|[\s;|&({`])"
_FORMAT_BEFORE = re.compile(
    _SEPARATOR + r"date\b[^;|&()`]*?\s(?:\+\S*|(['\"])\+[^'\"]*)$"
    "|" + _SEPARATOR + r"printf\s*\(?\s*(?:-v\s+\S+\s+)?(?:\S*|(['\"])[^'\"]*)$"
    r"|strftime\(\s*['\"][^'\"]*$"
)
# Letters an author means as systemd's own: a user unit's `%h`/`%u`/`%U` (the user's home,
# name, uid), a template's `%i`/`%I` (its instance).
_USER_LETTERS = frozenset("huU")
_INSTANCE_LETTERS = frozenset("iI")


@rule("EX205", Severity.ERROR, fix="safe")
def specifier_in_shell_script(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `%` conversion in a shell script is a systemd specifier.

    What it does:
    Finds `%X` inside `bash -c` scripts (and in arguments of `date` and `printf`) where X
    is a letter systemd resolves, such as `%s`, `%d`, `%H`, `%m`. Where the script shows
    a format was meant (a `date +FORMAT` word, printf's format, `strftime("…")`) it is an
    error with a fix; elsewhere a warning without one, since the author may want
    systemd's value. A user unit's `%h`, `%u`, `%U` (that user's home, name and uid) and a
    template's `%i`, `%I` (its instance) outside a format are what the author wants and
    are not reported.

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
    The fix doubles the `%` (`%%` is a literal percent sign); it is offered only inside a
    format, where `date` or `printf` was meant to see the `%`.
    """
    meant = _meant_letters(ctx)
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
            script = found is not None and word_index == found[1].word_index
            if script:
                received = displayed(found[1].value.text)  # type: ignore[index]
            for use in find_specifiers(raw.value.text, ctx.version):
                if not use.known or use.letter not in _FORMAT_LETTERS:
                    continue
                in_format = not script or _FORMAT_BEFORE.search(raw.value.text[: use.offset])
                if not in_format and use.letter in meant:
                    continue
                yield _hit(ctx, cmd, raw, use.offset, use.letter, where, received, bool(in_format))


def _meant_letters(ctx: UnitContext) -> frozenset[str]:
    """The letters whose systemd value this unit's author means outside a format."""
    letters: frozenset[str] = frozenset()
    if ctx.user_manager is not None:
        letters |= _USER_LETTERS
    if "@" in ctx.unit.name.rpartition(".")[0]:
        letters |= _INSTANCE_LETTERS
    return letters


def _hit(
    ctx: UnitContext,
    cmd: Command,
    raw: Word,
    offset: int,
    letter: str,
    where: str,
    received: str,
    in_format: bool,
) -> Hit:
    pos = raw.value.origins[offset]
    span = raw.value.span(offset, offset + 2)
    value = ctx.specifiers.get(letter, "")
    said = (
        f"`%{letter}` is a systemd specifier: it becomes {value!r} before the {where} runs "
        f"(it receives `{shown(received)}`)"
    )
    if not in_format:
        return Hit(
            span,
            f"{said}; if a literal percent sign was meant, write `%%{letter}`",
            path=cmd.assignment.path,
            severity=Severity.WARNING,
        )
    edit = insert_at(ctx, pos, cmd.assignment.path, "%", "%")
    return Hit(
        span,
        f"{said}; write `%%{letter}` for a literal percent sign",
        path=cmd.assignment.path,
        fix=Fix(f"Escape as `%%{letter}`", (edit,)) if edit else None,
    )
