from __future__ import annotations

import re
from collections.abc import Iterator

from linting.commands import shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule

# A command put in the background: `&` that is not `&&`, `>&`, `&>` or `|&`.
_BACKGROUND = re.compile(r"(?<![&>|])&(?![&>])")


@rule("OP416", Severity.WARNING)
def forking_several_daemons(ctx: UnitContext) -> Iterator[Hit]:
    """
    `Type=forking` whose `ExecStart=` starts several daemons, without `PIDFile=`.

    What it does:
    Reports `Type=forking` units without `PIDFile=` whose `ExecStart=` script (inline or a
    wrapper the linter reads) puts two or more commands in the background, or starts two
    or more vLLM servers.

    Why is this bad?
    With `Type=forking` systemd needs the main process; without `PIDFile=` it guesses
    (`GuessMainPID=yes`, systemd.service(5)) and "cannot reliably" do so when more than
    one daemon remains: it picks one or none. When the one it did not pick dies, nothing
    restarts it; when it picks none, a stop or a crash is not seen at all.

    Example:
    ```ini
    Type=forking
    ExecStart=/bin/bash -c '/opt/vllm/bin/vllm serve /models/a --port 8001 & /opt/vllm/bin/vllm serve /models/b --port 8002 &'
    ```

    Use instead:
    ```ini
    # vllm-a.service
    ExecStart=/opt/vllm/bin/vllm serve /models/a --port 8001
    # vllm-b.service
    ExecStart=/opt/vllm/bin/vllm serve /models/b --port 8002
    ```
    (one unit per server; systemd then watches each).
    """
    if ctx.unit.last_value("Service", "Type") != "forking":
        return
    if ctx.unit.last_value("Service", "PIDFile"):
        return
    scripts = {w.path: w.text.text for w in ctx.wrapper_scripts}
    for cmd in ctx.commands:
        if cmd.key != "ExecStart":
            continue
        found = shell_script(cmd)
        texts = [found[1].value.text] if found is not None else []
        texts += list(scripts.values())
        daemons = max((len(_BACKGROUND.findall(t)) for t in texts), default=0)
        servers = len([vc for vc in ctx.vllm_servers if vc.command is cmd])
        count = max(daemons, servers)
        if count < 2:
            continue
        yield Hit(
            cmd.assignment.value.span(),
            f"Type=forking without PIDFile= starts {count} daemons: systemd guesses one main "
            "process (or none) and does not see the others stop or crash; run each server in "
            "a unit of its own, or set PIDFile=",
            path=cmd.assignment.path,
        )
