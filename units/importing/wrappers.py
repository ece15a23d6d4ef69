"""Why an ExecStart= that does not run vLLM directly cannot become a profile, in the
unit's own terms: a container, a `bash -c` script, a script file, `docker compose`.

A profile writes the vLLM command line itself (its fields are that command's words), so
a unit whose vLLM words live elsewhere — in a container's arguments after a `docker run`
of its own, inside a shell script, in a script file or a compose file — would become a
profile whose fields describe nothing that runs (docs/unit-import.md, "What is not
imported"). The linter still checks such units (`linting.servers` finds their vLLM);
this module only names the wrapper, with the linter's own readers."""

from __future__ import annotations

import posixpath

from linting.commands import Command
from linting.shell.invocation import find_shell_script
from linting.shell.wrapper import SHELLS
from linting.vllm.container import container_run, parse_container_run
from linting.vllm.launchers import launched

DIRECT = (
    "a profile's ExecStart= is the vLLM command itself (`vllm serve`, or a python running "
    "vllm.entrypoints.openai.api_server)"
)


def wrapper_reason(command: Command) -> str:
    """What the command runs instead of vLLM, and why that is not a profile."""
    argv = [a.value for a in command.args]
    argv = argv[launched([a.text for a in argv]) :]
    texts = [a.text for a in argv]
    if not texts:
        return "ExecStart= runs no program."
    program = posixpath.basename(texts[0])
    if program in ("docker", "podman") and "compose" in texts[1:3]:
        return (
            f"ExecStart= runs `{program} compose`: the containers it starts, vLLM's among "
            f"them, are described in a compose file, not in the unit; {DIRECT}."
        )
    run = parse_container_run(argv)
    if run is not None:
        return (
            f"ExecStart= runs vLLM in a container (`{program} run … {run.image.text}`); "
            f"{DIRECT}, and the container's options are not profile fields."
        )
    if container_run(argv) is not None:
        return f"ExecStart= runs a container (`{program} run`), not vLLM; {DIRECT}."
    if find_shell_script(texts) is not None:
        return f"ExecStart= runs a shell script (`{program} -c …`) that starts vLLM; {DIRECT}."
    script = texts[1] if program in SHELLS and len(texts) > 1 else texts[0]
    if program in SHELLS or script.endswith(".sh"):
        return f"ExecStart= runs the script {script}, which the unit does not contain; {DIRECT}."
    return f"ExecStart= does not run a vLLM server directly (it runs {texts[0]}): {DIRECT}."
