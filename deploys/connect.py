"""A transport for a stored `Host`: the one place host rows become connections.

Job steps, the probe and the request page's live read all go through `transport_for`, so
the rules hold everywhere: an SSH host is only ever reached with its *pinned* key
(RejectPolicy, nothing learned), and credentials are a key file path or the agent, never
key material from the database.
"""

from __future__ import annotations

from deploys.models import Host
from hostops.channel import Transport, TransportError
from hostops.channel.base import DEFAULT_COMMAND_TIMEOUT
from hostops.channel.local import LocalTransport
from hostops.channel.ssh import SSHTransport

DEFAULT_CONNECT_TIMEOUT = 10.0


class HostNotReady(TransportError):
    """The host row cannot be used yet (key not pinned, no credentials configured)."""


def transport_for(
    host: Host,
    *,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
) -> Transport:
    """SSHTransport with the pinned key (key file or agent), or LocalTransport.

    Nothing connects yet: the first operation does. Raises HostNotReady for an SSH host
    whose key an admin has not confirmed, or that names no way to authenticate.
    """
    if host.transport == Host.Transport.LOCAL:
        return LocalTransport(command_timeout=command_timeout)
    if not host.host_key:
        raise HostNotReady(
            f"host {host.name}: its SSH host key is not pinned yet; an admin must confirm "
            "the key fingerprint on the host page before specadmin connects to it"
        )
    use_agent = host.auth == Host.Auth.AGENT
    key_file = host.key_file.strip() if host.auth == Host.Auth.KEY_FILE else ""
    if not use_agent and not key_file:
        raise HostNotReady(
            f"host {host.name}: authentication is 'key file' but no key file path is set"
        )
    try:
        return SSHTransport(
            host.address,
            host.ssh_port,
            host.username,
            pinned_host_key=host.host_key,
            key_filename=key_file or None,
            use_agent=use_agent,
            connect_timeout=connect_timeout,
            command_timeout=command_timeout,
        )
    except ValueError as exc:  # an unparsable pinned key: a broken row, not a network error
        raise HostNotReady(f"host {host.name}: the pinned host key is unusable: {exc}") from exc


__all__ = ["HostNotReady", "transport_for"]
