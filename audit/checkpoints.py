"""Signed checkpoints of the audit chain's head, kept outside the database.

No hash inside the database can reveal that its newest events were deleted: the chain
simply ends earlier. So, like CloudTrail's digest files (each signed, each naming the one
before it) and Certificate Transparency's signed tree heads, specadmin regularly signs
"the chain ends at event #N with hash H" and writes it where a database writer cannot
reach: a file (`AUDIT_CHECKPOINT_FILE`, append-only JSON lines), optionally syslog (the
journal) and a command (`AUDIT_CHECKPOINT_COMMAND`, e.g. ssh to a log host). `verifyaudit`
checks every checkpoint in the file against the chain: a checkpointed event that is gone
or different is named.

The signature is Ed25519 (`cryptography`) with a key derived from the audit secret
(`audit.keys`): the public key, printed by `verifyaudit --public-key`, lets anyone check a
checkpoint without being able to make one. A checkpoint also records `keyed_from`, the
first keyed event: rewriting keyed events as legacy, unkeyed ones is then detected.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import logging.handlers
import os
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from django.conf import settings
from django.utils import timezone

from audit.keys import AuditKeys
from audit.models import KEYED_SCHEME, AuditEvent

CHECKPOINT_TYPE = "specadmin-audit-checkpoint"
CHECKPOINT_VERSION = 1
COMMAND_TIMEOUT = 30
MAX_LINE = 4096
log = logging.getLogger(__name__)


class CheckpointRefused(Exception):
    """The chain contradicts the last checkpoint: no new checkpoint is signed over it."""


def _canonical(document: dict[str, Any]) -> bytes:
    body = {k: v for k, v in document.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def line_digest(line: str) -> str:
    """What the next checkpoint names as `previous` (CloudTrail's previousDigestSignature)."""
    return hashlib.sha256(line.strip().encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Checkpoint:
    """One parsed line of a checkpoint file (`problem` set: unusable, and why)."""

    line_number: int
    document: dict[str, Any]
    digest: str
    problem: str = ""

    @property
    def head_id(self) -> int:
        return int(self.document.get("head_id", 0))

    @property
    def head_hash(self) -> str:
        return str(self.document.get("head_hash", ""))

    @property
    def keyed_from(self) -> int | None:
        value = self.document.get("keyed_from")
        return int(value) if isinstance(value, int) else None

    @property
    def created_at(self) -> str:
        return str(self.document.get("created_at", "?"))

    def describe(self) -> str:
        where = f" (line {self.line_number})" if self.line_number else ""
        return f"the checkpoint of {self.created_at}{where}"


# -- making one ------------------------------------------------------------------------


def chain_head() -> tuple[int, str, int | None]:
    """(newest event id, its hash, first keyed event id) as the database has them now."""
    last = AuditEvent.objects.order_by("-id").values_list("id", "hash").first()
    keyed = (
        AuditEvent.objects.filter(scheme=KEYED_SCHEME)
        .order_by("id")
        .values_list("id", flat=True)
        .first()
    )
    head_id, head_hash = last if last else (0, "")
    return head_id, head_hash, keyed


def sign(document: dict[str, Any], keys: AuditKeys) -> dict[str, Any]:
    signature = keys.signing_key.sign(_canonical(document))
    return {**document, "signature": base64.b64encode(signature).decode("ascii")}


def signature_ok(document: dict[str, Any], keys: AuditKeys) -> bool:
    try:
        signature = base64.b64decode(str(document.get("signature", "")), validate=True)
        keys.public_key.verify(signature, _canonical(document))
    except (InvalidSignature, ValueError):
        return False
    return True


def make_checkpoint(keys: AuditKeys, *, previous: Checkpoint | None = None) -> dict[str, Any]:
    """A signed checkpoint of the chain as it is now; refused when the chain no longer
    holds what `previous` (the last one written) saw."""
    if previous is not None and not previous.problem:
        problem = checkpoint_problem(previous)
        if problem:
            raise CheckpointRefused(problem)
    head_id, head_hash, keyed_from = chain_head()
    document = {
        "type": CHECKPOINT_TYPE,
        "version": CHECKPOINT_VERSION,
        "created_at": timezone.now().isoformat(timespec="seconds"),
        "head_id": head_id,
        "head_hash": head_hash,
        "keyed_from": keyed_from,
        "key_id": keys.key_id,
        "public_key": keys.public_key_hex,
        "previous": previous.digest if previous else "",
    }
    return sign(document, keys)


# -- where they go ---------------------------------------------------------------------


def checkpoint_file() -> Path | None:
    path = getattr(settings, "AUDIT_CHECKPOINT_FILE", "")
    return Path(path) if path else None


def _append(path: Path, line: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _syslog(line: str) -> None:
    """One line to syslog (journald reads /dev/log), tagged `specadmin-audit`."""
    handler = logging.handlers.SysLogHandler(
        address=getattr(settings, "AUDIT_CHECKPOINT_SYSLOG_ADDRESS", "/dev/log"),
        facility=logging.handlers.SysLogHandler.LOG_AUTHPRIV,
    )
    try:
        handler.ident = "specadmin-audit: "
        handler.emit(logging.LogRecord(__name__, logging.INFO, __file__, 0, line, None, None))
    finally:
        handler.close()


def _command(argv: list[str], line: str) -> None:
    done = subprocess.run(
        argv,
        input=(line + "\n").encode("utf-8"),
        capture_output=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        raise OSError(
            f"`{shlex.join(argv)}` exited {done.returncode}: "
            f"{done.stderr.decode(errors='replace').strip()[:300]}"
        )


@dataclass(frozen=True)
class Written:
    document: dict[str, Any]
    sinks: list[str]
    failures: list[str]


def write_checkpoint(keys: AuditKeys) -> Written:
    """Sign the chain's head now and write it to every configured place. A failing
    place is reported (and logged) without stopping the others."""
    path = checkpoint_file()
    previous = last_checkpoint(path) if path else None
    document = make_checkpoint(keys, previous=previous)
    line = json.dumps(document, sort_keys=True, separators=(",", ":"))
    sinks: list[str] = []
    failures: list[str] = []
    places: list[tuple[str, Any]] = []
    if path:
        places.append((f"file {path}", lambda: _append(path, line)))
    if getattr(settings, "AUDIT_CHECKPOINT_SYSLOG", False):
        places.append(("syslog", lambda: _syslog(line)))
    command = getattr(settings, "AUDIT_CHECKPOINT_COMMAND", "")
    if command:
        argv = shlex.split(command)
        places.append((f"command {argv[0]}", lambda: _command(argv, line)))
    for name, write in places:
        try:
            write()
            sinks.append(name)
        except (OSError, subprocess.SubprocessError) as exc:
            log.error("audit checkpoint not written to %s: %s", name, exc)
            failures.append(f"{name}: {exc}")
    return Written(document, sinks, failures)


# -- reading and checking them ---------------------------------------------------------


def last_checkpoint(path: Path) -> Checkpoint | None:
    """The file's last checkpoint, read from its end (the file grows by one line every
    few minutes, for years); None when it has none."""
    if not path.exists():
        return None
    with path.open("rb") as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - 2 * MAX_LINE))
        tail = fh.read().decode("utf-8", errors="replace")
    lines = tail.splitlines()
    if size > 2 * MAX_LINE:
        lines = lines[1:]  # the first may be cut
    for raw in reversed(lines):
        if raw.strip():
            return _parse(0, raw.strip())
    return None


def _parse(number: int, line: str) -> Checkpoint:
    document: dict[str, Any] = {}
    problem = ""
    if len(line) > MAX_LINE:
        problem = "the line is too long to be a checkpoint"
    else:
        with contextlib.suppress(ValueError):
            parsed = json.loads(line)
            document = parsed if isinstance(parsed, dict) else {}
        if document.get("type") != CHECKPOINT_TYPE:
            problem = "not a specadmin audit checkpoint"
        elif not isinstance(document.get("head_id"), int):
            problem = "no head event id"
    return Checkpoint(number, document, line_digest(line), problem)


def read_checkpoints(path: Path) -> list[Checkpoint]:
    """Every line of a checkpoint file, parsed (a line that is not one is kept, with its
    problem, so a verifier can say so)."""
    if not path.exists():
        return []
    result = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                result.append(_parse(number, raw.strip()))
    return result


def checkpoint_problem(checkpoint: Checkpoint, keys: AuditKeys | None = None) -> str:
    """What is wrong between `checkpoint` and the chain in the database ("" if nothing):
    a bad signature, or the event it saw missing or different."""
    problem = document_problem(checkpoint, keys)
    if problem or checkpoint.head_id == 0:
        return problem
    head_id = checkpoint.head_id
    stored = AuditEvent.objects.filter(pk=head_id).values_list("hash", flat=True).first()
    last = AuditEvent.objects.filter(pk__lt=head_id).order_by("-id").values_list("id", flat=True)
    return head_problem(checkpoint, stored, last.first() or 0)


def document_problem(checkpoint: Checkpoint, keys: AuditKeys | None) -> str:
    """What is wrong with the checkpoint itself: unreadable, or not signed with `keys`."""
    if checkpoint.problem:
        return f"{checkpoint.describe()}: {checkpoint.problem}"
    if keys is not None and not signature_ok(checkpoint.document, keys):
        return (
            f"{checkpoint.describe()} has no valid signature of this audit key "
            f"(key id {keys.key_id}): it was not written by specadmin with it"
        )
    return ""


def head_problem(checkpoint: Checkpoint, stored: str | None, chain_end: int) -> str:
    """The checkpointed event against the database: `stored` is its hash there (None:
    absent) and `chain_end` the newest event id below it."""
    head_id = checkpoint.head_id
    if head_id == 0:
        return ""
    if stored is None:
        first_missing = chain_end + 1
        span = (
            f"event #{head_id} is missing"
            if first_missing == head_id
            else f"events #{first_missing}–#{head_id} are missing"
        )
        return (
            f"{span}: {checkpoint.describe()} saw the chain end at event #{head_id}, "
            f"the database's chain ends at #{chain_end}"
        )
    if stored != checkpoint.head_hash:
        return (
            f"event #{head_id} is not the event {checkpoint.describe()} saw (hash "
            f"{checkpoint.head_hash[:12]}…, now {stored[:12]}…): it or an event before it "
            "was altered and the hashes recomputed"
        )
    return ""


__all__ = [
    "Checkpoint",
    "CheckpointRefused",
    "Written",
    "chain_head",
    "checkpoint_file",
    "checkpoint_problem",
    "document_problem",
    "head_problem",
    "make_checkpoint",
    "read_checkpoints",
    "sign",
    "signature_ok",
    "write_checkpoint",
]
