"""The vLLM service a unit runs, as the pipeline needs it: the exact argv systemd passes,
and where the server answers (address, port, served model name, API key).

The argv comes from the linter's Exec model (`linting.report.CommandInfo.argv`: systemd's
word splitting, specifiers and environment substitution), so what we check and probe is
what systemd will run. The few vLLM options read here follow vLLM's own parser:
`FlexibleArgumentParser` accepts `--opt=value` and `_` for `-` in option names
(vllm/utils/argparse_utils.py), `--port` defaults to 8000 and `--host` to all interfaces
(vllm/entrypoints/openai/cli_args.py), `--served-model-name` takes one or more names and
defaults to the model, `--api-key` may also come from VLLM_API_KEY.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from linting.report import CommandInfo
from linting.vllm.detect import find_vllm

DEFAULT_PORT = 8000  # vllm/entrypoints/openai/cli_args.py
ALL_INTERFACES = ("", "0.0.0.0", "::", "[::]", "None")
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class VllmService:
    """What a unit's ExecStart runs and where it answers, seen from the host itself."""

    argv: tuple[str, ...]  # the exact ExecStart argv
    style: str  # "serve" (`vllm serve MODEL …`) or "api_server" (`python -m …api_server`)
    args_start: int  # index in argv of the first vLLM argument
    model: str
    served_model_name: str  # the name /v1/models must list
    address: str  # where to connect on the host: the bound address, or loopback
    port: int
    api_key: str = ""  # needed for /v1/* when the server was started with --api-key

    @property
    def base_url(self) -> str:
        """The server's URL from the host itself (readiness and benchmark requests)."""
        host = f"[{self.address}]" if ":" in self.address else self.address
        return f"http://{host}:{self.port}"

    @property
    def vllm_args(self) -> tuple[str, ...]:
        """The arguments vLLM's parser receives (after `serve` / the module name)."""
        return self.argv[self.args_start :]


def _options(args: Sequence[str]) -> tuple[list[str], dict[str, list[list[str]]]]:
    """Positionals and `--name` → every occurrence's values (names normalised like
    FlexibleArgumentParser: `_` → `-` before the first `.`)."""
    positionals: list[str] = []
    options: dict[str, list[list[str]]] = {}
    current: list[str] | None = None
    for arg in args:
        if arg.startswith("--") and len(arg) > 2:
            name, eq, value = arg[2:].partition("=")
            head, dot, tail = name.partition(".")
            name = head.replace("_", "-") + dot + tail
            current = [value] if eq else []
            options.setdefault(name, []).append(current)
            if eq:
                current = None
        elif arg.startswith("-") and len(arg) > 1 and not arg[1:].replace(".", "").isdigit():
            current = None  # a short option we do not read (-tp 8, -O3)
        elif current is not None:
            current.append(arg)
        else:
            positionals.append(arg)
    return positionals, options


def _last(options: dict[str, list[list[str]]], name: str) -> list[str]:
    values = options.get(name) or []
    return values[-1] if values else []


def vllm_service(commands: Sequence[CommandInfo], environment: dict[str, str]) -> VllmService:
    """The vLLM server among a unit's ExecStart commands; ValueError when there is none.

    `environment`: the unit's environment as systemd sets it (for VLLM_API_KEY).
    """
    for command in commands:
        if command.key != "ExecStart":
            continue
        found = find_vllm(list(command.argv))
        if found is None:
            continue
        args = command.argv[found.args_start :]
        positionals, options = _options(args)
        model = (_last(options, "model") or [""])[0]
        if found.style == "serve" and positionals:
            model = positionals[0]
        served = _last(options, "served-model-name")
        host = (_last(options, "host") or [""])[0]
        port_text = (_last(options, "port") or [str(DEFAULT_PORT)])[0]
        try:
            port = int(port_text)
        except ValueError:
            raise ValueError(f"--port {port_text!r} is not a number") from None
        api_key = (_last(options, "api-key") or [environment.get("VLLM_API_KEY", "")])[0]
        return VllmService(
            argv=tuple(command.argv),
            style=found.style,
            args_start=found.args_start,
            model=model,
            served_model_name=(served[0] if served else model),
            address=LOOPBACK if host in ALL_INTERFACES else host,
            port=port,
            api_key=api_key,
        )
    raise ValueError("no ExecStart= of this unit runs a vLLM server (vllm serve, or python -m …)")


__all__ = ["DEFAULT_PORT", "VllmService", "vllm_service"]
