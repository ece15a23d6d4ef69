"""How commands and files reach a GPU host: SSH (paramiko) or local (pystemd + NVML).

Import the implementations from their modules (`hostops.channel.ssh`,
`hostops.channel.local`): the local one needs pystemd, the SSH one paramiko.
"""

from .base import (
    CommandResult,
    GpuInfo,
    GpuProcess,
    JournalEntry,
    Transport,
    is_valid_unit_name,
)
from .errors import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectionLost,
    DiskFull,
    FileRefused,
    ForwardRefused,
    GpuUnavailable,
    HostKeyMismatch,
    HostUnreachable,
    RemoteCommandFailed,
    TransportError,
    WriteFailed,
)
from .push import PushInterrupted, PushResult, UnitPushError, push_unit, restore_backup

__all__ = [
    "AuthenticationFailed",
    "CommandResult",
    "CommandTimeout",
    "ConnectionLost",
    "DiskFull",
    "FileRefused",
    "ForwardRefused",
    "GpuInfo",
    "GpuProcess",
    "GpuUnavailable",
    "HostKeyMismatch",
    "HostUnreachable",
    "JournalEntry",
    "PushInterrupted",
    "PushResult",
    "RemoteCommandFailed",
    "Transport",
    "TransportError",
    "UnitPushError",
    "WriteFailed",
    "is_valid_unit_name",
    "push_unit",
    "restore_backup",
]
