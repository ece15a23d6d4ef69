"""Witnesses: places every audit checkpoint is sent to as it is made, which the server
cannot rewrite afterwards (docs/security.md, "Audit checkpoints and witnesses").

The server's own checkpoint file (`AUDIT_CHECKPOINT_FILE`) shows deleted events to
someone who cannot write files; whoever holds the audit key and root on the server can
re-sign it. A copy elsewhere, made at the moment each checkpoint was signed, cannot be
re-signed later: `verifyaudit --checkpoints COPY` holds the chain to it.

A witness has a name, says whether it is *outside* this server, and `send(line)`s one
checkpoint line or raises `WitnessError`. A line a witness did not take waits in a
spool file beside the checkpoint file and is sent again, in order, before the next one;
`verifyaudit` reports what waits. The kinds:
- `FileWitness` (`AUDIT_WITNESS_FILE`, on by default): append-only JSON lines, mode 0600.
  It is outside only on another filesystem than the checkpoint file: put it on another
  machine's mount (NFS, a log host's share), ideally append-only there (`chattr +a`).
- `WebhookWitness` (`AUDIT_WITNESS_URL`): POSTs the checkpoint as JSON (the signed line
  itself, `Content-Type: application/json`; a bearer token from `AUDIT_WITNESS_TOKEN`).
  A receiver that appends each body as a line keeps a file `verifyaudit` reads.
- `CommandWitness` (`AUDIT_CHECKPOINT_COMMAND`): the line on a command's stdin, e.g.
  `ssh loghost 'cat >> checkpoints.jsonl'`.
- `SyslogWitness` (`AUDIT_CHECKPOINT_SYSLOG`): the journal, on this machine: not outside.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import logging.handlers
import os
import shlex
import subprocess
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

COMMAND_TIMEOUT = 30
log = logging.getLogger(__name__)


class WitnessError(Exception):
    """A witness did not take a checkpoint; the message says why."""


def append_line(path: Path, line: str) -> None:
    """Append one line (O_APPEND, fsync; created 0600 with its directory)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _device(path: Path) -> int | None:
    """The filesystem holding `path` (its nearest existing ancestor)."""
    for candidate in (path, *path.parents):
        with contextlib.suppress(OSError):
            return candidate.stat().st_dev
    return None


class Witness(ABC):
    name: str

    @property
    @abstractmethod
    def outside(self) -> bool:
        """Whether this copy is out of reach of someone who controls this server."""

    @property
    def copy_path(self) -> Path | None:
        """A file of the witnessed lines this machine can read (verifyaudit checks it)."""
        return None

    @abstractmethod
    def send(self, line: str) -> None: ...


class FileWitness(Witness):
    def __init__(self, path: Path, server_file: Path | None) -> None:
        self.path = path
        self.server_file = server_file
        self.name = f"witness file {path}"

    @property
    def outside(self) -> bool:
        if self.server_file is None:
            return False
        here = _device(self.server_file)
        return here is not None and _device(self.path) != here

    @property
    def copy_path(self) -> Path:
        return self.path

    def send(self, line: str) -> None:
        try:
            append_line(self.path, line)
        except OSError as exc:
            raise WitnessError(str(exc)) from None


class WebhookWitness(Witness):
    outside = True

    def __init__(self, url: str, token: str, timeout: float) -> None:
        self.url, self.token, self.timeout = url, token, timeout
        self.name = f"webhook {url}"

    def send(self, line: str) -> None:
        if not self.url.startswith(("https://", "http://")):
            raise WitnessError(f"AUDIT_WITNESS_URL {self.url!r} is not an http(s) URL")
        headers = {"Content-Type": "application/json", "User-Agent": "specadmin-audit"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(
            self.url, data=line.encode("utf-8"), headers=headers, method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                status = response.status
        except urllib.error.HTTPError as exc:
            raise WitnessError(f"answered HTTP {exc.code} {exc.reason}") from None
        except (urllib.error.URLError, OSError) as exc:
            raise WitnessError(str(getattr(exc, "reason", exc))) from None
        if not 200 <= status < 300:
            raise WitnessError(f"answered HTTP {status}")


class CommandWitness(Witness):
    outside = True  # what it is for: a log host (docs/operations.md); the operator's word

    def __init__(self, command: str) -> None:
        self.argv = shlex.split(command)
        self.name = f"command {self.argv[0]}"

    def send(self, line: str) -> None:
        try:
            done = subprocess.run(
                self.argv,
                input=(line + "\n").encode("utf-8"),
                capture_output=True,
                timeout=COMMAND_TIMEOUT,
                check=False,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise WitnessError(str(exc)) from None
        if done.returncode != 0:
            raise WitnessError(
                f"`{shlex.join(self.argv)}` exited {done.returncode}: "
                f"{done.stderr.decode(errors='replace').strip()[:300]}"
            )


class SyslogWitness(Witness):
    """One line to syslog (journald reads /dev/log), tagged `specadmin-audit`."""

    outside = False  # the journal lives on this machine (unless it is forwarded)

    def __init__(self, address: str) -> None:
        self.address = address
        self.name = "syslog"

    def send(self, line: str) -> None:
        try:
            handler = logging.handlers.SysLogHandler(
                address=self.address, facility=logging.handlers.SysLogHandler.LOG_AUTHPRIV
            )
        except OSError as exc:
            raise WitnessError(str(exc)) from None
        try:
            handler.ident = "specadmin-audit: "
            record = logging.LogRecord(__name__, logging.INFO, __file__, 0, line, None, None)
            handler.emit(record)
        finally:
            handler.close()


def server_checkpoint_file() -> Path | None:
    path = getattr(settings, "AUDIT_CHECKPOINT_FILE", "")
    return Path(path) if path else None


def configured_witnesses() -> list[Witness]:
    """The witnesses the settings name, in the order they are sent to."""
    witnesses: list[Witness] = []
    path = getattr(settings, "AUDIT_WITNESS_FILE", "")
    if path:
        witnesses.append(FileWitness(Path(path), server_checkpoint_file()))
    for url in getattr(settings, "AUDIT_WITNESS_URLS", []):
        witnesses.append(
            WebhookWitness(
                url,
                getattr(settings, "AUDIT_WITNESS_TOKEN", ""),
                getattr(settings, "AUDIT_WITNESS_TIMEOUT", 10),
            )
        )
    command = getattr(settings, "AUDIT_CHECKPOINT_COMMAND", "")
    if command:
        witnesses.append(CommandWitness(command))
    if getattr(settings, "AUDIT_CHECKPOINT_SYSLOG", False):
        witnesses.append(
            SyslogWitness(getattr(settings, "AUDIT_CHECKPOINT_SYSLOG_ADDRESS", "/dev/log"))
        )
    return witnesses


# -- lines a witness has not taken yet -------------------------------------------------


def _server_path() -> Path:
    return server_checkpoint_file() or Path(settings.VAR_DIR) / "audit-checkpoints"


def writers_lock() -> Path:
    """`<checkpoint file>.lock`: what checkpoint writers hold (`exclusive`)."""
    server = _server_path()
    return server.with_name(f"{server.name}.lock")


def spool_path(witness: Witness) -> Path:
    """Beside the checkpoint file: `<checkpoint file>.pending-<witness id>`."""
    server = _server_path()
    digest = hashlib.sha256(witness.name.encode()).hexdigest()[:12]
    return server.with_name(f"{server.name}.pending-{digest}")


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an flock(2) on `path` (created 0600) inside the block: one checkpoint writer at
    a time, so each names the one before it and the spools are read and rewritten whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def pending(witness: Witness) -> list[str]:
    """The lines waiting for `witness`, oldest first."""
    spool = spool_path(witness)
    if not spool.exists():
        return []
    return [line for line in spool.read_text(encoding="utf-8").splitlines() if line.strip()]


def _rewrite_spool(spool: Path, lines: list[str]) -> None:
    if not lines:
        spool.unlink(missing_ok=True)
        return
    temp = spool.with_name(f".{spool.name}.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write("".join(line + "\n" for line in lines))
        fh.flush()
        os.fsync(fh.fileno())
    temp.replace(spool)


@dataclass(frozen=True)
class Delivery:
    witness: Witness
    error: str = ""  # "" when everything waiting, this line included, was taken
    waiting: int = 0


def deliver(witness: Witness, line: str) -> Delivery:
    """Send what waits for `witness`, then `line`, in order; keep what it did not take.
    Called under the checkpoint writers' lock (`exclusive`)."""
    spool = spool_path(witness)
    lines = [*pending(witness), line]
    for index, waiting in enumerate(lines):
        try:
            witness.send(waiting)
        except WitnessError as exc:
            _rewrite_spool(spool, lines[index:])
            log.error(
                "audit checkpoint not taken by %s (%d waiting, sent again with the next "
                "checkpoint): %s",
                witness.name,
                len(lines) - index,
                exc,
            )
            return Delivery(witness, str(exc), len(lines) - index)
    _rewrite_spool(spool, [])
    return Delivery(witness)


# -- what verifyaudit says about them -------------------------------------------------


def _created_at(line: str) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(line[line.find("{") :]).get("created_at", "?"))
    return "?"


@dataclass(frozen=True)
class WitnessStatus:
    warnings: list[str]
    held: bool  # at least one witness outside this server, and none of those behind


def witness_status() -> WitnessStatus:
    """Whether the checkpoints leave this server, and what waits for which witness."""
    witnesses = configured_witnesses()
    warnings: list[str] = []
    outside = [w for w in witnesses if w.outside]
    if not outside:
        named = ", ".join(w.name for w in witnesses) or "no witness at all"
        warnings.append(
            "no copy of the audit checkpoints leaves this server "
            f"(checkpoint file {server_checkpoint_file()}; {named}, on this machine): "
            "someone with root and the audit key here can re-sign them after rewriting "
            "history. Put AUDIT_WITNESS_FILE on another machine's mount, or set "
            "AUDIT_WITNESS_URL or AUDIT_CHECKPOINT_COMMAND (docs/security.md)"
        )
    behind = False
    for witness in witnesses:
        waiting = pending(witness)
        if waiting:
            behind = behind or witness.outside
            warnings.append(
                f"{len(waiting)} checkpoints wait for {witness.name}, the oldest of "
                f"{_created_at(waiting[0])}: it did not take them (the log says why); each "
                "new checkpoint sends them again, `manage.py auditcheckpoint` does it now"
            )
    return WitnessStatus(warnings, bool(outside) and not behind)


__all__ = [
    "CommandWitness",
    "Delivery",
    "FileWitness",
    "SyslogWitness",
    "WebhookWitness",
    "Witness",
    "WitnessError",
    "WitnessStatus",
    "append_line",
    "configured_witnesses",
    "deliver",
    "exclusive",
    "pending",
    "witness_status",
    "writers_lock",
]
