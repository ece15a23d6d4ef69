"""Exceptions raised by transports: one hierarchy so job steps can catch `TransportError`.

Messages never contain secrets (key material, passphrases): they are shown in job logs and
the audit history.
"""

from __future__ import annotations


class TransportError(Exception):
    """Base class: anything that went wrong talking to a host."""


class HostUnreachable(TransportError):
    """TCP connect refused/timed out, or the peer did not speak SSH (banner)."""


class ConnectionLost(TransportError):
    """An established connection dropped in the middle of an operation."""


class AuthenticationFailed(TransportError):
    """The host refused our credentials (or the key file could not be used)."""


class HostKeyMismatch(TransportError):
    """The host presented a key other than the pinned one: refused, never learned."""

    def __init__(
        self, host: str, port: int, expected: str, presented: str, presented_type: str = ""
    ) -> None:
        self.host = host
        self.port = port
        self.expected_fingerprint = expected
        self.presented_fingerprint = presented
        self.presented_type = presented_type
        super().__init__(
            f"host key of {host}:{port} does not match the pinned key: "
            f"expected {expected}, presented {presented}"
            + (f" ({presented_type})" if presented_type else "")
            + "; if the host was reinstalled, re-pin its key after checking it out of band"
        )


class CommandTimeout(TransportError):
    """A command did not finish before its deadline; its channel was closed."""

    def __init__(
        self, argv: list[str], timeout: float, stdout: bytes = b"", stderr: bytes = b""
    ) -> None:
        self.argv = argv
        self.timeout = timeout
        self.stdout = stdout
        self.stderr = stderr
        super().__init__(f"command timed out after {timeout:g}s: {argv!r}")


class RemoteCommandFailed(TransportError):
    """A command a helper needs to succeed exited non-zero (or a D-Bus call failed)."""

    def __init__(self, argv: list[str], exit_code: int, stderr: bytes | str = b"") -> None:
        self.argv = argv
        self.exit_code = exit_code
        text = stderr.decode(errors="replace") if isinstance(stderr, bytes) else stderr
        self.stderr = text
        tail = text.strip()[-2000:]
        super().__init__(
            f"{argv!r} failed with exit code {exit_code}" + (f": {tail}" if tail else "")
        )


class FileRefused(TransportError):
    """A file on the host that specadmin will not read: not a regular file (a device, a
    FIFO, a directory, a link to `/dev/null`), or larger than the reader's limit."""

    def __init__(self, path: str, why: str, *, size: int | None = None) -> None:
        self.path = path
        self.why = why
        self.size = size
        super().__init__(f"{path} on the host was not read: {why}")


class WriteFailed(TransportError):
    """A write to the host was not confirmed (a write, the close or the sync failed, or
    what the host holds afterwards is not what was sent); the target was not replaced."""

    def __init__(self, path: str, why: str) -> None:
        self.path = path
        self.why = why
        super().__init__(f"writing {path} on the host failed: {why}; {path} was not replaced")


class DiskFull(WriteFailed):
    """The host's filesystem has no room for the file (ENOSPC, or the free space the host
    reports after a failed write is smaller than the file)."""


class GpuUnavailable(TransportError):
    """GPU state cannot be read: no driver/NVML, no nvidia-smi, or unparsable output."""


class ForwardRefused(TransportError):
    """The host's sshd would not connect a port forward ("direct-tcpip" channel) to
    `address:port`. `code` is the RFC 4254 §5.1 reason: 1 administratively prohibited
    (sshd_config `AllowTcpForwarding`, `DisableForwarding`, `PermitOpen`), 2 connect failed
    (nothing listens there), 3 unknown channel type, 4 resource shortage."""

    ADMINISTRATIVELY_PROHIBITED = 1
    CONNECT_FAILED = 2

    def __init__(self, host: str, address: str, port: int, code: int, reason: str) -> None:
        self.host = host
        self.address = address
        self.port = port
        self.code = code
        self.reason = reason
        super().__init__(
            f"{host}: sshd refused to forward to {address}:{port} on the host "
            f"({reason}, RFC 4254 code {code})"
        )
