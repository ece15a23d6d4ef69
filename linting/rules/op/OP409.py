from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from linting.commands import Command, shell_script
from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.vllm.container import container_run

# A script whose last command runs in the background (`… &`) and is not waited for.
_BACKGROUND_END = re.compile(r"&\s*(?:;?\s*exit(?:\s+\d+)?\s*)?;?\s*$")


@rule("OP409", Severity.ERROR)
def command_daemonizes(ctx: UnitContext) -> Iterator[Hit]:
    """
    An `ExecStart=` that starts something in the background and exits, under
    `Type=simple` or `Type=exec`.

    What it does:
    Finds `ray start` without `--block`, `docker run -d` / `podman run --detach`,
    `docker compose up -d`, and shell scripts that end with a command in the background
    (`… &`) without `wait`, in services of `Type=simple` (the default) or `exec`; and the
    `docker run -d` of a vLLM image inside the wrapper script `ExecStart=` runs.

    Why is this bad?
    With these types the command *is* the service: when it exits, systemd considers the
    service finished and, with the default `KillMode=control-group`, kills what it left
    behind (measured on 252: `sh -c "sleep 300 & exit 0"` leaves the unit inactive and no
    `sleep`). `Restart=` then starts it again and again, or the server is simply gone.

    Example:
    ```ini
    ExecStart=/opt/ray/bin/ray start --head --port 6379
    ```

    Use instead:
    ```ini
    ExecStart=/opt/ray/bin/ray start --head --port 6379 --block
    ```
    (or `docker run` without `-d`; or `Type=forking` for a program that really forks).
    """
    if (ctx.unit.last_value("Service", "Type") or "simple") not in ("simple", "exec"):
        return
    for cmd in ctx.commands:
        if cmd.key != "ExecStart":
            continue
        why = _daemonizes(cmd)
        if why:
            yield Hit(
                cmd.assignment.value.span(),
                f"{why}: the command exits at once, systemd considers the service finished "
                "and stops what it left running",
                path=cmd.assignment.path,
            )
    for vc in ctx.vllm_servers:
        run = vc.container
        if run is None or not run.detached or vc.script is None:
            continue
        if not _ends_script(ctx, vc.script, run.image.span().start.line):
            continue  # more follows (`docker logs -f`, `docker wait`): it may keep running
        yield Hit(
            run.image.span(),
            f"the script runs `{run.engine} run -d` and ends: systemd considers the service "
            f"finished while the container runs on outside it, so Restart= and stop no longer "
            "reach the server; run the container in the foreground (`exec docker run` "
            "without -d)",
            path=vc.path,
        )


def _daemonizes(cmd: Command) -> str | None:
    argv = cmd.argv
    program = posixpath.basename(argv[0]) if argv else ""
    if program == "ray" and argv[1:2] == ["start"] and "--block" not in argv:
        return "`ray start` without --block starts Ray in the background"
    run = container_run([a.value for a in cmd.args])
    if run is not None and run.detached:
        return f"`{program} run -d` detaches from the container"
    if (
        program in ("docker", "podman", "docker-compose")
        and "up" in argv
        and ("-d" in argv or "--detach" in argv)
    ):
        return f"`{program} … up -d` detaches from the containers"
    found = shell_script(cmd)
    if found is not None:
        script = found[1].value.text
        if _BACKGROUND_END.search(script) and not re.search(r"\bwait\b", script):
            return "the script's last command runs in the background (`&`) and is not waited for"
    return None


# What may follow a detached `docker run` in a script that then simply ends.
_HARMLESS = re.compile(r"^(?:#|echo\b|printf\b|exit\b|true\b|:)")


def _ends_script(ctx: UnitContext, script: str, line: int) -> bool:
    """Is the command whose words reach `line` the last thing the script does?"""
    source = ctx.unit.sources.get(script)
    if source is None:
        return False
    lines = source.lines
    index = line - 1
    while index < len(lines) and lines[index].rstrip().endswith("\\"):
        index += 1  # the rest of the command's continuation lines
    rest = [text.strip() for text in lines[index + 1 :]]
    return all(not text or _HARMLESS.match(text) for text in rest)
