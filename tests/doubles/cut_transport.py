"""TEST DOUBLE: a real SSHTransport whose connection is cut around one rename.

The fault of "the SSH connection dropped right after the rename of a push": the unit's
rename runs for real on the host (`after=True`), then the connection is closed under the
transport and ConnectionLost raised, as paramiko would when the network died before the
answer arrived. With `after=False` the connection dies before the rename reaches the
host. Only the first rename of a `.service` file is cut; everything else is the real
transport (a fresh connection is opened by the next operation, as after a real cut).
"""

from __future__ import annotations

from typing import Any

from deploys.connect import transport_for
from deploys.models import Host
from hostops.channel.base import StagedFile
from hostops.channel.errors import ConnectionLost
from hostops.channel.ssh import SSHTransport


class CutAroundRename(SSHTransport):
    def __init__(self, *args: Any, after: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.after = after
        self.cuts = 0

    def _commit_file(self, staged: StagedFile) -> None:
        if self.cuts or not staged.path.endswith(".service"):
            return super()._commit_file(staged)
        self.cuts += 1
        if self.after:
            super()._commit_file(staged)
        client = self._client
        if client is not None:
            client.close()  # the connection is gone, as on a dead network
        raise ConnectionLost(f"{self!r}: connection lost (test double: cut around the rename)")


def cutting_connect(*, after: bool = True) -> Any:
    """A `connect` for `runner.run_deploy`: the host's own transport, with the cut."""

    def connect(host: Host) -> CutAroundRename:
        real = transport_for(host)
        assert isinstance(real, SSHTransport)
        return CutAroundRename(
            real.host,
            real.port,
            real.username,
            pinned_host_key=host.host_key,
            key_filename=real.key_filename,
            use_agent=real.use_agent,
            connect_timeout=real.connect_timeout,
            command_timeout=real.command_timeout,
            after=after,
        )

    return connect


__all__ = ["CutAroundRename", "cutting_connect"]
