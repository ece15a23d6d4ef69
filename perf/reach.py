"""Where the worker reaches a host's vLLM server.

`VllmService.base_url` is the server as seen from the host itself (loopback when vLLM
binds every interface). The benchmark runs in the worker, so for an SSH host:
- vLLM on every interface (its default, vllm/entrypoints/openai/cli_args.py) or on a
  specific address: the worker connects to the host's address (or that address);
- vLLM on loopback only (`--host 127.0.0.1`, a safe setup): the worker measures through an
  SSH port forward over the host's transport (`Transport.forward_local`, `ssh -L` inside
  the worker), open only while the measurement runs. The server stays private to the host.
A local host (the worker runs on it) is measured at `base_url` directly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any

from hostops.channel import ForwardRefused, Transport, TransportError
from hostops.service import ALL_INTERFACES, DEFAULT_PORT, VllmService
from perf.selectors import last_deploy

LOOPBACKS = ("127.0.0.1", "localhost", "::1", "[::1]")


class ServiceUnreachable(Exception):
    """The worker cannot reach the server; the message says why and what would help."""


@dataclass(frozen=True)
class Endpoint:
    """Where the benchmark client connects (`url`) and what it measures (`label`, stored
    with the run and logged: the server's own URL, and the forward when there is one)."""

    url: str
    label: str
    forwarded: bool = False


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


def needs_forward(service: VllmService, host: Any) -> bool:
    """An SSH host whose vLLM listens on loopback only: reached through a port forward."""
    return host.transport != "local" and bound_address(service) in LOOPBACKS


def worker_url(service: VllmService, host: Any) -> str:
    """The URL the worker connects to directly (no forward: see `measured_endpoint`)."""
    if host.transport == "local":
        return service.base_url
    if bound_address(service) in ALL_INTERFACES:
        address = f"[{host.address}]" if ":" in host.address else host.address
        return f"http://{address}:{service.port}"
    return service.base_url  # a specific address: the worker connects to it


@contextmanager
def measured_endpoint(
    service: VllmService, host: Any, transport: Callable[[], Transport]
) -> Iterator[Endpoint]:
    """The endpoint to measure for the with-block; for a loopback-only server on an SSH
    host, a port forward over `transport()` is open until the block ends.

    Raises ServiceUnreachable (before the block runs) when the forward cannot be opened:
    the host cannot be reached, its sshd forbids forwarding, or nothing listens there.
    """
    if not needs_forward(service, host):
        url = worker_url(service, host)
        yield Endpoint(url=url, label=url)
        return
    with ExitStack() as stack:
        local_address, local_port = _open_forward(stack, service, host, transport)
        yield Endpoint(
            url=f"http://{local_address}:{local_port}",
            label=f"{service.base_url} on {host.name} (SSH port forward)",
            forwarded=True,
        )


def _open_forward(
    stack: ExitStack, service: VllmService, host: Any, transport: Callable[[], Transport]
) -> tuple[str, int]:
    """Enter the forward into `stack`; its refusal as a ServiceUnreachable that says why."""
    try:
        return stack.enter_context(transport().forward_local(service.address, service.port))
    except ForwardRefused as exc:
        raise ServiceUnreachable(refusal_message(exc, service, host)) from None
    except TransportError as exc:
        raise ServiceUnreachable(
            f"vLLM on {host.name} listens on {service.address}:{service.port} only, and the "
            f"SSH port forward to it could not be opened: {exc}"
        ) from None


def refusal_message(exc: ForwardRefused, service: VllmService, host: Any) -> str:
    """What sshd's refusal means for this server, and what would help (RFC 4254 §5.1 codes;
    OpenSSH: sshd_config(5) AllowTcpForwarding, DisableForwarding, PermitOpen)."""
    where = f"{service.address}:{service.port}"
    if exc.code == ForwardRefused.CONNECT_FAILED:
        return (
            f"nothing answers at {where} on {host.name} (sshd could not connect there "
            "through the SSH port forward): the vLLM server is not running or listens "
            "elsewhere; check `systemctl status` and `journalctl -u` of its unit on the host "
            "and its --host/--port"
        )
    if exc.code == ForwardRefused.ADMINISTRATIVELY_PROHIBITED:
        return (
            f"vLLM on {host.name} listens on {where} only, and the host's sshd refused to "
            f"forward to it (administratively prohibited: AllowTcpForwarding, "
            f"DisableForwarding or PermitOpen in sshd_config forbid it for {host.username}); "
            "allow local forwarding for that user (`AllowTcpForwarding local`, in a "
            "`Match User` block to limit it), or bind vLLM to an address the worker can "
            "reach (--host)"
        )
    return f"vLLM on {host.name} listens on {where} only, and {exc}"


def deployed_service(profile: Any, host: Any) -> VllmService:
    """`profile` as last deployed to `host`: its version's --host and --port."""
    request = last_deploy(profile, host)
    if request is None:
        raise ServiceUnreachable(
            f"profile {profile.name} was never deployed to {host.name} successfully; give the URL"
        )
    data = request.profile_version.data
    bound = str(data.get("host") or "")
    port = int(data.get("port") or DEFAULT_PORT)
    argv = ("vllm", "serve", "m", *(["--host", bound] if bound else []))
    return VllmService(
        argv=argv,
        style="serve",
        args_start=2,
        model="m",
        served_model_name="m",
        address=LOOPBACKS[0] if bound in ALL_INTERFACES else bound,
        port=port,
    )
