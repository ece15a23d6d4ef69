from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import load_word
from linting.context import UnitContext
from linting.execline.specifiers import find_specifiers
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# Options whose value is a host name or an address (vLLM, Ray, SGLang, llama.cpp, …).
_ADDRESS_OPTION = re.compile(r"^--?[\w-]*(host|address|addr|ip|bind)[\w-]*(=|$)", re.I)


@rule("EX207", Severity.WARNING)
def specifier_means_something_else(ctx: UnitContext) -> Iterator[Hit]:
    """
    `%h` used as a host name, or `%u`/`%U` as the service's user, in a system unit.

    What it does:
    Finds `%h` in the value of an address option (`--host`, `--node-ip-address`,
    `--bind`, …) of an Exec command, and `%u`/`%U` in `User=` of a system unit. With
    `DynamicUser=yes` the latter is an error. In a user unit (`systemctl --user`) `%h` is
    that user's home, still no host name; `User=%u` there names the user who runs it.

    Why is this bad?
    In the system manager `%h` is the home directory of the user running the manager
    (`/root`), not the host name (`%H`), and `%u` is that user's name (`root`), not the
    service's (systemd.unit(5), "Specifiers"). `--node-ip-address=%h` passes `/root`;
    `User=%u` makes the service run as root, and together with `DynamicUser=yes` it
    silently defeats the dynamic user (measured on 252: `id` prints uid=0).

    Example:
    ```ini
    ExecStart=/opt/ray/bin/ray start --head --node-ip-address=%h
    ```

    Use instead:
    ```ini
    ExecStart=/opt/ray/bin/ray start --head --node-ip-address=%H
    ```
    """
    yield from _home_as_host(ctx)
    user = ctx.unit.last("Service", "User")
    if user is None or ctx.user_manager is not None:
        return  # in a user unit `%u` is the user who runs it: User=%u changes nothing
    for use in find_specifiers(user.value.text, ctx.version):
        if use.letter not in "uU":
            continue
        dynamic = ctx.unit.last_value("Service", "DynamicUser") in ("yes", "true", "1", "on")
        value = ctx.specifiers.get(use.letter, "root")
        yield Hit(
            user.value.span(use.offset, use.offset + 2),
            f"`%{use.letter}` is the service manager's user ({value}) in a system unit, so "
            f"the service runs as {value}"
            + ("; with DynamicUser=yes this defeats the dynamic user" if dynamic else "")
            + ": name the user, or drop User= to use DynamicUser=",
            path=user.path,
            severity=Severity.ERROR if dynamic else None,
        )


def _home_as_host(ctx: UnitContext) -> Iterator[Hit]:
    home = ctx.specifiers.get("h", "/root")
    for cmd in ctx.commands:
        written = cmd.assignment.value.text
        if "%" not in written and "\\" not in written:
            # No specifier anywhere in the line (the usual case): a `%` is either written or
            # comes from an escape (`\x25h` is `%h` once systemd unescapes the word).
            continue
        argv = cmd.command.argv
        for index in range(1, len(argv)):
            option = argv[index - 1].text
            inline = _ADDRESS_OPTION.match(argv[index].text)
            if not (inline and "=" in argv[index].text) and not _ADDRESS_OPTION.match(option):
                continue
            raw = load_word(cmd, index)
            for use in find_specifiers(raw.value.text, ctx.version):
                if use.letter == "h":
                    yield Hit(
                        raw.value.span(use.offset, use.offset + 2),
                        f"`%h` is a home directory ({home}), not the host name: the option "
                        "receives a path; write `%H` for the host name",
                        path=cmd.assignment.path,
                    )
