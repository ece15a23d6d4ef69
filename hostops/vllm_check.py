"""Preflight with the host's own vLLM: parse the unit's exact argv with vLLM's argument
parser and build its engine arguments and SpeculativeConfig, without loading a model or
touching a GPU, before production is stopped.

The check runs as a short Python program under the interpreter that runs the service: the
unit's python (`python -m vllm…`), or the one in the `vllm` console script's `#!` line (pip
writes one for every entry point). What it calls, and where vLLM keeps it:
- `FlexibleArgumentParser`: vllm/utils/argparse_utils.py (0.11 on), vllm/utils.py before;
- `make_arg_parser(parser)`: vllm/entrypoints/openai/cli_args.py (the server's flags); the
  `serve` subcommand adds the positional `model_tag` first (vllm/entrypoints/cli/serve.py);
- `AsyncEngineArgs.from_cli_args(args)`: vllm/engine/arg_utils.py;
- `SpeculativeConfig(**dict)`: vllm/config/speculative.py; its validation runs without a
  target model for model-free methods (ngram, suffix …); methods that need the target
  model's config raise "target_model_config must be present": left to the engine start.
Hosts where no Python can be found, or whose vLLM lacks these, skip the check visibly.

It runs as the unit's `User=`, never as root with code the service account controls
(`hostops.run_as`, which also says when it does not run at all).
"""

from __future__ import annotations

import json
import posixpath
import re
from dataclasses import dataclass
from typing import Any

from hostops.channel.base import CommandResult, Transport
from hostops.channel.errors import CommandTimeout, TransportError
from hostops.programs import program
from hostops.run_as import plan_run_as
from hostops.service import VllmService

CHECK_TIMEOUT_S = 120.0  # `import vllm` imports torch: seconds when warm, longer cold
MARKER = "@@specadmin-vllm-check "
SHEBANG_BYTES = 256  # the `#!` line pip writes is one short line
_PYTHON = re.compile(r"python(\d+(\.\d+)*)?$")

# Runs on the host under vLLM's Python (hostops/programs/vllm_args_check.py says how).
CHECK_PROGRAM = program("vllm_args_check.py")


@dataclass(frozen=True)
class VllmCheck:
    """`ok`: True accepted, False rejected, None not checked (`reason` says why)."""

    ok: bool | None
    reason: str = ""
    python: str = ""
    version: str = ""
    stage: str = ""
    note: str = ""
    user: str = ""  # whom it ran as on the host

    def as_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "reason": self.reason,
            "python": self.python,
            "version": self.version,
            "stage": self.stage,
            "note": self.note,
            "user": self.user,
        }


def _resolve(transport: Transport, executable: str) -> str:
    """An absolute path for the executable (systemd also accepts bare names in ExecStart=,
    looked up in its own PATH)."""
    if executable.startswith("/"):
        return executable
    found = transport.run(["sh", "-c", 'command -v -- "$1"', "sh", executable], timeout=30)
    path = found.stdout_text.strip()
    return path if found.ok and path.startswith("/") else ""


def python_for(transport: Transport, service: VllmService) -> tuple[str, str]:
    """(the interpreter that runs the service, "") or ("", why none could be found)."""
    executable = _resolve(transport, service.argv[0])
    if not executable:
        return "", f"{service.argv[0]} is not on the host's PATH"
    return _python_of(transport, executable)


def _python_of(transport: Transport, executable: str) -> tuple[str, str]:
    if _PYTHON.search(posixpath.basename(executable)):
        return executable, ""
    try:  # bounded: a regular file only (never a FIFO or device), its first line
        head = transport.read_file(executable, limit=SHEBANG_BYTES, partial=True)
    except TransportError as exc:
        return "", f"cannot read {executable}: {exc}"[:300]
    if head is None:
        return "", f"{executable} is not on the host"
    first = head.decode(errors="replace").split("\n", 1)[0]
    if not first.startswith("#!"):
        return "", f"{executable} is not a script with a #! line (not a pip entry point)"
    words = first[2:].split()
    if len(words) >= 2 and posixpath.basename(words[0]) == "env":
        words = words[1:]
    if words and _PYTHON.search(posixpath.basename(words[0])):
        return words[0], ""
    return "", (
        f"{executable} starts with {first[:80]!r}, not a Python interpreter: cannot tell "
        "which Python runs vLLM"
    )


def check_vllm_args(
    transport: Transport,
    service: VllmService,
    environment: dict[str, str],
    *,
    unit_text: str,
    timeout: float = CHECK_TIMEOUT_S,
) -> VllmCheck:
    """Run CHECK_PROGRAM under the service's Python with the unit's environment, as the
    unit's user (`hostops.run_as`); not at all where that cannot be done safely."""
    executable = _resolve(transport, service.argv[0])
    if not executable:
        return VllmCheck(None, f"{service.argv[0]} is not on the host's PATH")
    python, why = _python_of(transport, executable)
    if not python:
        return VllmCheck(None, why)
    run_as = plan_run_as(
        transport, unit_text, executables=[executable, python], environment=environment
    )
    if run_as.skip:
        return VllmCheck(None, run_as.skip, python)
    request = json.dumps({"style": service.style, "args": list(service.vllm_args)})
    env = [f"{k}={v}" for k, v in sorted(environment.items()) if "=" not in k]
    argv = [*run_as.prefix, "env", *env, python, "-c", CHECK_PROGRAM, request]
    try:
        result = transport.run(argv, timeout=timeout)
    except CommandTimeout:
        why = f"the check did not finish within {timeout:g} s"
        return VllmCheck(None, why, python, user=run_as.user)
    return _verdict(result, python, run_as.user)


def _verdict(result: CommandResult, python: str, user: str) -> VllmCheck:
    lines = [line for line in result.stdout_text.splitlines() if line.startswith(MARKER)]
    try:
        answer = json.loads(lines[-1][len(MARKER) :]) if lines else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        tail = (result.stderr_text or result.stdout_text).strip()[-1500:]
        why = f"{python} exited {result.exit_code} without a verdict: {tail}"
        return VllmCheck(None, why, python, user=user)
    return VllmCheck(
        ok=answer.get("ok") if answer.get("ok") in (True, False, None) else None,
        reason=str(answer.get("error", ""))[:3000],
        python=python,
        version=str(answer.get("version", ""))[:100],
        stage=str(answer.get("stage", ""))[:100],
        note=str(answer.get("note", ""))[:1000],
        user=user,
    )


__all__ = ["CHECK_PROGRAM", "CHECK_TIMEOUT_S", "VllmCheck", "check_vllm_args", "python_for"]
