"""EX: what systemd does to `$`, `%` and quotes in Exec lines before the program runs."""

from __future__ import annotations

import re
from collections.abc import Iterator

from linting.context import UnitContext, load_word, shell_script
from linting.execline.specifiers import find_specifiers
from linting.findings import Edit, Finding, Fix, Severity
from linting.rules.registry import register
from linting.spans import Pos, Span

_ASSIGNED = r"(?:^|[\s;&|(])(?:local\s+|export\s+|readonly\s+|declare\s+(?:-\w+\s+)*)?{name}="
_READ = r"\bread\b[^;&|\n]*\b{name}\b"
_FOR = r"\bfor\s+{name}\s+in\b"


def _script_defines(script: str, name: str) -> bool:
    """Does the shell script itself give `name` a value (so `${name}` was meant for it)?"""
    escaped = re.escape(name)
    return any(re.search(p.format(name=escaped), script) for p in (_ASSIGNED, _READ, _FOR))


def _insert_at(ctx: UnitContext, pos: Pos, path: str, char: str, expect: str) -> Edit | None:
    """An insertion of `char` before file position `pos`, only if the file really has
    `expect` there (text from a specifier or an escape has no 1:1 position)."""
    if ctx.unit.text_at(path, Span.at(pos, len(expect))) != expect:
        return None
    return Edit(Span(pos, pos), char)


def _shown(text: str, limit: int = 160) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[: limit - 1] + "…"


@register(
    "EX201",
    "shell-variable-expanded-by-systemd",
    Severity.ERROR,
    fix="safe",
    doc="""
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
    """,
)
def check_shell_variables(ctx: UnitContext) -> Iterator[Finding]:
    for cmd in ctx.commands:
        found = shell_script(cmd)
        if found is None:
            continue
        shell, script_arg = found
        script = script_arg.value.text
        word = cmd.command.argv[script_arg.word_index]
        for index, sub in cmd.substitutions:
            if index != script_arg.word_index or not sub.braced:
                continue
            span = word.span(sub.start, sub.end)
            ref = "${" + sub.name + "}"
            if sub.value is None:
                if ctx.has_unknown_environment:
                    continue
                fix_edit = _insert_at(ctx, word.origins[sub.start], cmd.assignment.path, "$", "$")
                ctx.add(
                    "EX201",
                    span,
                    f"systemd replaces `{ref}` with an empty string before {shell.dialect} "
                    f"runs (not set in the unit); {shell.dialect} receives: "
                    f"`{_shown(script)}`. Write `$${ref[1:]}` to pass it to the shell.",
                    path=cmd.assignment.path,
                    fix=Fix(f"Escape as `$${ref[1:]}`", (fix_edit,)) if fix_edit else None,
                    data={"argv": cmd.argv},
                )
            elif _script_defines(script, sub.name):
                ctx.add(
                    "EX201",
                    span,
                    f"the script assigns {sub.name} itself, but systemd already replaced "
                    f"`{ref}` with the unit's value {sub.value!r}; write `$${ref[1:]}` if "
                    "the shell's value was meant",
                    path=cmd.assignment.path,
                    severity=Severity.WARNING,
                )
    return iter(())


@register(
    "EX202",
    "unset-variable-removes-argument",
    Severity.ERROR,
    doc="""
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
    """,
)
def check_unset_whole_word(ctx: UnitContext) -> Iterator[Finding]:
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
            ctx.add(
                "EX202",
                word.span(),
                f"`${sub.name}` {reason}: systemd removes this argument{consequence}; the "
                f"program receives {_shown(repr(cmd.argv))}",
                path=cmd.assignment.path,
                severity=severity,
                data={"argv": cmd.argv},
            )
    return iter(())


@register(
    "EX203",
    "braced-variable-stays-one-argument",
    Severity.ERROR,
    fix="safe",
    doc="""
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
    """,
)
def check_braced_multi(ctx: UnitContext) -> Iterator[Finding]:
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
            ctx.add(
                "EX203",
                span,
                f"`${{{sub.name}}}` is passed as one argument {sub.value!r}; write "
                f"`${sub.name}` (no braces) to split it into "
                f"{len(sub.value.split())} arguments",
                path=cmd.assignment.path,
                fix=fix,
            )
    return iter(())


@register(
    "EX204",
    "unset-braced-variable-becomes-empty",
    Severity.ERROR,
    doc="""
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
    """,
)
def check_unset_braced(ctx: UnitContext) -> Iterator[Finding]:
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
            ctx.add(
                "EX204",
                word.span(sub.start, sub.end),
                f"`${{{sub.name}}}` is not set in the unit: systemd replaces it with an empty "
                f"string, so this argument becomes {result!r}",
                path=cmd.assignment.path,
            )
    return iter(())


# printf/date conversions that are also systemd specifiers: almost certainly meant for the
# shell when they appear in a script.
_FORMAT_LETTERS = set("sdHMmSYybBaAjuUwWTtVgGhlnNpiIfcCEL")


@register(
    "EX205",
    "specifier-in-shell-script",
    Severity.ERROR,
    fix="safe",
    doc="""
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
    """,
)
def check_specifiers_in_scripts(ctx: UnitContext) -> Iterator[Finding]:
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
                received = found[1].value.text
            for use in find_specifiers(raw.value.text, ctx.version):
                if not use.known or use.letter not in _FORMAT_LETTERS:
                    continue
                pos = raw.value.origins[use.offset]
                span = raw.value.span(use.offset, use.offset + 2)
                edit = _insert_at(ctx, pos, cmd.assignment.path, "%", "%")
                value = ctx.specifiers.get(use.letter, "")
                ctx.add(
                    "EX205",
                    span,
                    f"`%{use.letter}` is a systemd specifier: it becomes {value!r} before the "
                    f"{where} runs (it receives `{_shown(received)}`); write `%%{use.letter}` "
                    "for a literal percent sign",
                    path=cmd.assignment.path,
                    fix=Fix(f"Escape as `%%{use.letter}`", (edit,)) if edit else None,
                )
    return iter(())


@register(
    "EX206",
    "nested-quotes-removed",
    Severity.ERROR,
    doc="""
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
    """,
)
def check_nested_quotes(ctx: UnitContext) -> Iterator[Finding]:
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
                    ctx.add(
                        "EX206",
                        assignment.value.span(region.open, word.end),
                        f"the {region.quote} before `{_shown(text[after : word.end], 40)}` closes "
                        f"the outer quote instead of opening an inner one; the quotes inside "
                        f"are dropped and the program receives {_shown(repr(received), 200)}",
                        path=assignment.path,
                        data={"argv": received},
                    )
                    break
    return iter(())
