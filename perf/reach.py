"""Where the worker reaches a host's vLLM server.

`VllmService.base_url` is the server as seen from the host itself (loopback when vLLM
binds every interface). The benchmark runs in the worker, so for an SSH host it connects
to the host's address instead — possible when vLLM binds every interface (its default,
vllm/entrypoints/openai/cli_args.py) or a specific address. A server bound to loopback only
cannot be reached from another machine; the error says so and what to do.
"""

from __future__ import annotations

from typing import Any

from deploys.jobs.service import ALL_INTERFACES, DEFAULT_PORT, VllmService
from perf.selectors import last_deploy

LOOPBACKS = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServiceUnreachable(Exception):
    """The worker cannot reach the server; the message says why and what would help."""


def bound_address(service: VllmService) -> str:
    """The value of vLLM's `--host` ("" when absent: every interface)."""
    args = list(service.vllm_args)
    value = ""
    for i, arg in enumerate(args):
        if arg == "--host" and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith("--host="):
            value = arg.partition("=")[2]
    return value


def worker_url(service: VllmService, host: Any) -> str:
    if host.transport == "local":
        return service.base_url
    bound = bound_address(service)
    if bound in ALL_INTERFACES:
        address = f"[{host.address}]" if ":" in host.address else host.address
        return f"http://{address}:{service.port}"
    if bound not in LOOPBACKS or host.address in LOOPBACKS:
        return service.base_url  # a routable address, or a host on this very machine
    raise ServiceUnreachable(
        f"vLLM on {host.name} listens on {bound} only, which the worker cannot reach; "
        f"bind it to an address the worker can reach, or measure through an SSH tunnel "
        f"(`ssh -L PORT:{bound}:{service.port} {host.address}`, then `manage.py bench "
        "http://127.0.0.1:PORT --profile … --host …`)"
    )


def deployed_url(profile: Any, host: Any) -> str:
    """The URL of `profile` as last deployed to `host` (its version's --host and --port)."""
    request = last_deploy(profile, host)
    if request is None:
        raise ServiceUnreachable(
            f"profile {profile.name} was never deployed to {host.name} successfully; give the URL"
        )
    data = request.profile_version.data
    bound = str(data.get("host") or "")
    port = int(data.get("port") or DEFAULT_PORT)
    argv = ("vllm", "serve", "m", *(["--host", bound] if bound else []))
    service = VllmService(
        argv=argv,
        style="serve",
        args_start=2,
        model="m",
        served_model_name="m",
        address=LOOPBACKS[0] if bound in ALL_INTERFACES else bound,
        port=port,
    )
    return worker_url(service, host)
