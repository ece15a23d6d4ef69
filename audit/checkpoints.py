"""Signed checkpoints of the audit chain's head, kept outside the database.

No hash inside the database can reveal that its newest events were deleted: the chain
simply ends earlier. So, like CloudTrail's digest files (each signed, each naming the one
before it) and Certificate Transparency's signed tree heads, specadmin regularly signs
"the chain ends at event #N with hash H" and writes it where a database writer cannot
reach: a file (`AUDIT_CHECKPOINT_FILE`, append-only JSON lines), and, as it is made, to
every witness (`audit.witnesses`: another file, best on another machine's mount; a
webhook; a command such as ssh to a log host; syslog), copies the server cannot rewrite
later. `verifyaudit` checks every checkpoint of these files against the chain: a
checkpointed event that is gone or different is named.

The signature is Ed25519 (`cryptography`) with a key derived from the audit secret
(`audit.keys`): the public key, printed by `verifyaudit --public-key`, lets anyone check a
checkpoint without being able to make one. A checkpoint also records `keyed_from`, the
first keyed event: rewriting keyed events as legacy, unkeyed ones is then detected.

The first keyed event of a chain is preceded by a *genesis* checkpoint (`genesis: true`):
"from event #K on this chain is keyed, with the key of this public key", written and
witnessed before that event exists, so "keyed since installation" is anchored outside
the database from the first event on (docs/security.md).
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from django.conf import settings
from django.utils import timezone

from audit.keys import AuditKeys
from audit.models import KEYED_SCHEME, AuditEvent
from audit.witnesses import append_line, configured_witnesses, deliver, exclusive, writers_lock

CHECKPOINT_TYPE = "specadmin-audit-checkpoint"
CHECKPOINT_VERSION = 1
MAX_LINE = 4096
log = logging.getLogger(__name__)


class CheckpointRefused(Exception):
    """The chain contradicts the last checkpoint: no new checkpoint is signed over it."""


def _canonical(document: dict[str, Any]) -> bytes:
    body = {k: v for k, v in document.items() if k != "signature"}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")


def as_line(document: dict[str, Any]) -> str:
    """The one line a checkpoint is written as (and sent to witnesses as)."""
    return json.dumps(document, sort_keys=True, separators=(",", ":"))


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
    source: str = ""  # the file it was read from

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

    @property
    def genesis(self) -> bool:
        return self.document.get("genesis") is True

    def describe(self) -> str:
        what = "the genesis checkpoint" if self.genesis else "the checkpoint"
        where = f"line {self.line_number}" if self.line_number else ""
        if self.source:
            where = f"{where} of {self.source}" if where else self.source
        return f"{what} of {self.created_at}" + (f" ({where})" if where else "")


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


def make_checkpoint(
    keys: AuditKeys, *, previous: Checkpoint | None = None, genesis: bool = False
) -> dict[str, Any]:
    """A signed checkpoint of the chain as it is now; refused when the chain no longer
    holds what `previous` (the last one written) saw. `genesis`: the chain has no keyed
    event yet, and the next event (head + 1) is the first keyed one."""
    if previous is not None and not previous.problem:
        problem = checkpoint_problem(previous)
        if problem:
            raise CheckpointRefused(problem)
    head_id, head_hash, keyed_from = chain_head()
    if genesis:
        keyed_from = head_id + 1
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
    if genesis:
        document["genesis"] = True
    return sign(document, keys)


# -- where they go ---------------------------------------------------------------------


def checkpoint_file() -> Path | None:
    path = getattr(settings, "AUDIT_CHECKPOINT_FILE", "")
    return Path(path) if path else None


@dataclass(frozen=True)
class Written:
    document: dict[str, Any]
    sinks: list[str]
    failures: list[str]


def write_checkpoint(keys: AuditKeys, *, genesis: bool = False) -> Written:
    """Sign the chain's head now, append it to the checkpoint file and send it to every
    witness. A place that fails is reported (and logged) without stopping the others; a
    witness gets the line again with the next checkpoint (`audit.witnesses.deliver`)."""
    path = checkpoint_file()
    with exclusive(writers_lock()):
        previous = last_checkpoint(path) if path else None
        document = make_checkpoint(keys, previous=previous, genesis=genesis)
        line = as_line(document)
        sinks: list[str] = []
        failures: list[str] = []
        if path:
            try:
                append_line(path, line)
                sinks.append(f"file {path}")
            except OSError as exc:
                log.error("audit checkpoint not written to file %s: %s", path, exc)
                failures.append(f"file {path}: {exc}")
        for witness in configured_witnesses():
            delivery = deliver(witness, line)
            if delivery.error:
                failures.append(
                    f"{witness.name}: {delivery.error} ({delivery.waiting} checkpoints wait "
                    "for it, sent again with the next checkpoint)"
                )
            else:
                sinks.append(witness.name)
    return Written(document, sinks, failures)


def write_genesis(keys: AuditKeys) -> None:
    """Before a chain's first keyed event: the genesis checkpoint (once; again only when
    the event it announced was rolled back). Never stops the recording: a failure is
    logged, and verifyaudit reports the missing checkpoint."""
    path = checkpoint_file()
    last = last_checkpoint(path) if path else None
    head_id, _, _ = chain_head()
    if last is not None and last.genesis and last.head_id == head_id:
        return
    try:
        written = write_checkpoint(keys, genesis=True)
    except CheckpointRefused as exc:
        log.error("no genesis audit checkpoint written: %s", exc)
        return
    for failure in written.failures:
        log.error("genesis audit checkpoint not written to %s", failure)


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


def _parse(number: int, line: str, source: str = "") -> Checkpoint:
    """One line; what precedes its JSON object is skipped (a syslog/journal copy
    prefixes `specadmin-audit: `). The digest is over the line as specadmin writes it,
    so a witness that stores the JSON re-serialised the same way keeps the links."""
    document: dict[str, Any] = {}
    problem = ""
    text = line[line.find("{") :] if "{" in line else line
    if len(text) > MAX_LINE:
        problem = "the line is too long to be a checkpoint"
    else:
        with contextlib.suppress(ValueError):
            parsed = json.loads(text)
            document = parsed if isinstance(parsed, dict) else {}
        if document.get("type") != CHECKPOINT_TYPE:
            problem = "not a specadmin audit checkpoint"
        elif not isinstance(document.get("head_id"), int):
            problem = "no head event id"
    digest = line_digest(as_line(document) if not problem else text)
    return Checkpoint(number, document, digest, problem, source)


def read_checkpoints(path: Path) -> list[Checkpoint]:
    """Every line of a checkpoint file, parsed (a line that is not one is kept, with its
    problem, so a verifier can say so)."""
    if not path.exists():
        return []
    result = []
    with path.open(encoding="utf-8", errors="replace") as fh:
        for number, raw in enumerate(fh, start=1):
            if raw.strip():
                result.append(_parse(number, raw.strip(), str(path)))
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
    "write_genesis",
]
