from __future__ import annotations

import re
from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.extract_word import ExtractError, extract_first_word
from linting.findings import Hit, Severity
from linting.rules.registry import rule

_REFERENCE = re.compile(r"(?<!\$)\$(\{[A-Za-z_][A-Za-z0-9_]*[^}]*\}|[A-Za-z_][A-Za-z0-9_]*)")


@rule("EX208", Severity.WARNING, supersedes=("OP412",))
def variable_in_environment_value(ctx: UnitContext) -> Iterator[Hit]:
    """
    `$VAR` or `${VAR}` inside an `Environment=` value, which systemd does not expand.

    What it does:
    Finds variable references in the values of `Environment=` assignments: an error when
    the variable refers to itself (`PATH=…:$PATH`, meant to extend it), a warning
    otherwise (a literal `$` in a value is possible, if rare).

    Why is this bad?
    `Environment=` values are taken literally: only Exec lines substitute `$`
    (systemd.exec(5), "Environment="; measured on 252: `PATH=/opt/cuda/bin:$PATH` gives the
    service `PATH=/opt/cuda/bin:$PATH`). The service then finds none of the programs that
    were on the old `PATH`, or loads no library from `LD_LIBRARY_PATH`.

    Example:
    ```ini
    Environment=PATH=/usr/local/cuda/bin:$PATH
    ```

    Use instead:
    ```ini
    Environment=PATH=/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin
    ```
    (write the whole value; systemd's own default `PATH` is the list after the CUDA one).
    """
    for a in ctx.unit.get_all("Service", "Environment"):
        pos = 0
        while True:
            try:
                word, pos = extract_first_word(a.value, pos, relax_escapes=False)
            except ExtractError:
                break  # SD113 reports the line
            if word is None:
                break
            name, eq, value = word.value.text.partition("=")
            if not eq:
                continue
            offset = len(name) + 1
            for match in _REFERENCE.finditer(value):
                start, end = offset + match.start(), offset + match.end()
                referenced = match.group(1).strip("{}").split(":")[0]
                itself = referenced == name
                yield Hit(
                    word.value.span(start, end),
                    f"systemd does not expand `{match.group(0)}` in Environment=: {name} is "
                    f"literally {value!r}" + (f", not the old {name} extended" if itself else ""),
                    path=a.path,
                    severity=Severity.ERROR if itself else None,
                )
