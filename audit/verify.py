"""Checking the audit chain: recompute every hash, follow every link in id order, then
hold the chain to every signed checkpoint written outside the database.

What each attack leaves behind, and where it is named:
- a row edited (content, actor, kind…): its keyed hash no longer matches → that event;
- a row edited and every hash after it recomputed: without the key file the HMAC cannot be
  recomputed → the edited event; with it, the next checkpoint → the checkpointed event;
- rows deleted in the middle or at the start: a gap and a dangling `prev_hash` → the
  first event after the gap, naming the missing ids;
- rows deleted from the end and the head moved back: the checkpoints still name the
  events that are gone → "events #a–#b are missing";
- keyed events rewritten as legacy, unkeyed ones (to recompute plain sha256): a legacy
  event after a keyed one, or at or after a checkpoint's `keyed_from` → that event;
- the chain-head row edited or deleted: compared with the chain's end.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from audit.checkpoints import (
    Checkpoint,
    checkpoint_file,
    document_problem,
    head_problem,
    read_checkpoints,
)
from audit.keys import AuditKeyError, AuditKeys, key_path, load_keys
from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent


@dataclass(frozen=True)
class ChainReport:
    """The outcome of a walk: how many events were read and the first problem, if any."""

    events: int
    problem: str = ""
    event_id: int | None = None
    checkpoints: int = 0

    @property
    def ok(self) -> bool:
        return not self.problem

    def __str__(self) -> str:
        if self.ok:
            held = f"; matches {self.checkpoints} checkpoints" if self.checkpoints else ""
            return f"OK: {self.events} events, chain intact{held}"
        return f"BROKEN: {self.problem}"


def verify_chain(*, chunk_size: int = 2000, checkpoints_path: Path | None = None) -> ChainReport:
    """Walk the whole chain and stop at the first problem.

    `checkpoints_path`: a checkpoint file to hold the chain to (default: the configured
    `AUDIT_CHECKPOINT_FILE`; a copy from the log host or the journal works the same).
    Content is checked before the link, so an edited row is named itself.
    """
    try:
        keys = load_keys()
    except AuditKeyError as exc:
        return ChainReport(0, f"the audit key cannot be used: {exc}")
    path = checkpoints_path or checkpoint_file()
    checkpoints = read_checkpoints(path) if path else []
    keyed_from = min(
        (c.keyed_from for c in checkpoints if c.keyed_from and not c.problem), default=None
    )

    count = 0
    prev: AuditEvent | None = None
    # The hashes the checkpoints name, collected on the way (no query per checkpoint).
    wanted = {c.head_id for c in checkpoints if not c.problem}
    seen: dict[int, str] = {}
    events = AuditEvent.objects.order_by("id").iterator(chunk_size=chunk_size)
    for event in events:
        count += 1
        problem = _event_problem(event, prev, keys, keyed_from)
        if problem:
            return ChainReport(count, problem, event.id)
        if event.id in wanted:
            seen[event.id] = event.hash
        prev = event

    head = AuditChainHead.objects.filter(pk=AuditChainHead.SINGLETON_ID).first()
    last_id, last_hash = (prev.id, prev.hash) if prev else (0, GENESIS_HASH)
    if head is None and prev is not None:
        return ChainReport(count, "the chain head row is missing (audit_auditchainhead)")
    if head is not None and (head.last_id, head.last_hash) != (last_id, last_hash):
        return ChainReport(
            count,
            f"the chain ends at event #{last_id} but its head records event #{head.last_id}"
            f" (hash {head.last_hash[:12]}…): events at the end were deleted or altered",
            last_id or None,
        )
    problem, event_id = _checkpoints_problem(checkpoints, keys, seen, last_id)
    if problem:
        return ChainReport(count, problem, event_id)
    return ChainReport(count, checkpoints=len(checkpoints))


def _event_problem(
    event: AuditEvent, prev: AuditEvent | None, keys: AuditKeys | None, keyed_from: int | None
) -> str:
    if not event.keyed:
        if prev is not None and prev.keyed:
            return (
                f"{_describe(event)} is an unkeyed (legacy) event after keyed event "
                f"#{prev.id}: keyed events were rewritten so their hashes could be recomputed"
            )
        if keyed_from is not None and event.id >= keyed_from:
            return (
                f"{_describe(event)} is unkeyed, but the checkpoints record keyed events "
                f"from #{keyed_from}: it was rewritten so its hash could be recomputed"
            )
    else:
        if keys is None:
            return (
                f"{_describe(event)} is keyed, but the audit key file {key_path()} is missing: "
                "restore it from its backup to verify the history"
            )
        if event.key_id != keys.key_id:
            return (
                f"{_describe(event)} was hashed with audit key {event.key_id}, not with the key "
                f"in {key_path()} ({keys.key_id}): a different key file, or a forged event"
            )
    if event.hash != event.compute_hash(keys):
        return f"{_describe(event)}: stored hash does not match its content"
    expected_prev = prev.hash if prev else GENESIS_HASH
    if event.prev_hash != expected_prev:
        return _link_problem(event, prev)
    return ""


def _checkpoints_problem(
    checkpoints: list[Checkpoint], keys: AuditKeys | None, seen: dict[int, str], chain_end: int
) -> tuple[str, int | None]:
    """The first checkpoint the (intact, contiguous) chain contradicts, newest first: it
    covers the most. `seen`: the hash of each checkpointed event the walk found."""
    previous_digest = ""
    for checkpoint in checkpoints:
        if checkpoint.problem:
            return f"{checkpoint.describe()}: {checkpoint.problem}", None
        named = checkpoint.document.get("previous", "")
        if previous_digest and named != previous_digest:
            return (
                f"{checkpoint.describe()} does not follow the checkpoint before it in the "
                "file: checkpoints were removed or reordered",
                None,
            )
        previous_digest = checkpoint.digest
    for checkpoint in reversed(checkpoints):
        problem = document_problem(checkpoint, keys) or head_problem(
            checkpoint, seen.get(checkpoint.head_id), min(chain_end, checkpoint.head_id - 1)
        )
        if problem:
            return problem, checkpoint.head_id or None
    return "", None


def _describe(event: AuditEvent) -> str:
    return f"event #{event.id} ({event.kind} at {event.at.isoformat()})"


def _link_problem(event: AuditEvent, prev: AuditEvent | None) -> str:
    if prev is None:
        missing = f"; events #1–#{event.id - 1} are missing" if event.id > 1 else ""
        return f"{_describe(event)}: prev_hash does not match the start of the chain{missing}"
    first, last = prev.id + 1, event.id - 1
    gap = ""
    if first == last:
        gap = f"; event #{first} is missing"
    elif first < last:
        gap = f"; events #{first}–#{last} are missing"
    legacy = ""
    if event.keyed and not prev.keyed and not gap:
        legacy = (
            f" (the legacy, unkeyed events up to #{prev.id} were rewritten: the first keyed "
            "event no longer matches them)"
        )
    return f"{_describe(event)}: prev_hash does not match event #{prev.id}{gap}{legacy}"
