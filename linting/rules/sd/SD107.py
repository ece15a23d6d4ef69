from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule


@rule("SD107", Severity.WARNING)
def executable_not_absolute(ctx: UnitContext) -> Iterator[Hit]:
    """
    The executable is a bare name, looked up in systemd's fixed search path.

    What it does:
    Reports Exec commands whose executable is a plain file name such as `vllm` or `bash`:
    a warning for `vllm` and `python…` (usually installed in a virtualenv), information
    for other programs.

    Why is this bad?
    systemd does not use `$PATH` or the service's `Environment=PATH=` to find it: it
    searches a fixed list (/usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin). A `vllm`
    inside a virtualenv is not found, or a different one is.

    Example:
    ```ini
    ExecStart=vllm serve /models/m
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/venv/bin/vllm serve /models/m
    ```
    """
    for cmd in ctx.commands:
        if cmd.command.path.startswith("/"):
            continue
        # Interpreters and vLLM usually live in a virtualenv that the fixed path misses;
        # system tools (systemctl, journalctl) are found there reliably.
        risky = cmd.command.path == "vllm" or cmd.command.path.startswith("python")
        first = cmd.command.words[0]
        span = cmd.assignment.value.span(first.start, first.end)
        yield Hit(
            span,
            f"`{cmd.command.path}` is searched in systemd's fixed path "
            "(/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin), not $PATH; "
            "use an absolute path",
            path=cmd.assignment.path,
            severity=None if risky else Severity.INFO,
        )
