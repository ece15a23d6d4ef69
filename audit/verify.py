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
- the chain-head row edited or deleted: compared with the chain's end;
- the checkpoint file deleted or emptied: an error naming the file, never an OK;
- the chain rewritten *with* the key and the server's checkpoint file re-signed: the
  witnesses' copies (audit.witnesses) still hold what was signed at the time → the first
  contradicted checkpoint, and the events between it and the last one that still holds;
- a new key: the genesis checkpoint names the key the chain started with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
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
from audit.witnesses import configured_witnesses


@dataclass(frozen=True)
class ChainReport:
    """The outcome of a walk: how many events were read and the first problem, if any."""

    events: int
    problem: str = ""
    event_id: int | None = None
    per_file: tuple[int, ...] = ()  # checkpoints held, per file (the server's first)

    @property
    def ok(self) -> bool:
        return not self.problem

    @property
    def checkpoints(self) -> int:
        return sum(self.per_file)

    def __str__(self) -> str:
        if not self.ok:
            return f"BROKEN: {self.problem}"
        if not self.checkpoints:
            return f"OK: {self.events} events, chain intact; nothing recorded yet (no audit key)"
        first, *others = self.per_file
        more = f", and {sum(others)} in {len(others)} more file" if others else ""
        more += "s" if len(others) > 1 else ""
        return f"OK: {self.events} events, chain intact; matches {first} checkpoints{more}"


def default_checkpoint_files() -> list[Path]:
    """The server's checkpoint file, then every witness copy this machine can read."""
    files = [path] if (path := checkpoint_file()) else []
    for witness in configured_witnesses():
        if witness.copy_path is not None and witness.copy_path not in files:
            files.append(witness.copy_path)
    return files


def verify_chain(
    *, chunk_size: int = 2000, checkpoint_files: Sequence[Path] | None = None
) -> ChainReport:
    """Walk the whole chain and stop at the first problem.

    `checkpoint_files`: the files of checkpoints to hold the chain to (default: the
    server's `AUDIT_CHECKPOINT_FILE` and the witness file; a copy from a log host, a
    webhook's receiver or the journal works the same). A missing or empty one is a
    problem, except on a server that has recorded nothing yet (no events, no key).
    Content is checked before the link, so an edited row is named itself.
    """
    try:
        keys = load_keys()
    except AuditKeyError as exc:
        return ChainReport(0, f"the audit key cannot be used: {exc}")
    explicit = checkpoint_files is not None
    files = list(checkpoint_files) if explicit else default_checkpoint_files()
    per_file = {path: read_checkpoints(path) for path in files}
    checkpoints = [c for found in per_file.values() for c in found]
    walked = _walk(keys, checkpoints, chunk_size)
    if walked.problem:
        return ChainReport(walked.count, walked.problem, walked.event_id)
    count, last_id = walked.count, walked.last_id
    if not explicit and count == 0 and keys is None and not checkpoints:
        return ChainReport(0)  # a server that has recorded nothing yet
    for path, found in per_file.items():
        problem, event_id = _file_problem(path, found, count)
        if not problem:
            problem, event_id = _checkpoints_problem(found, keys, walked.seen, last_id)
        if problem:
            return ChainReport(count, problem, event_id)
    if not files:
        return ChainReport(count, "no checkpoint file is configured (AUDIT_CHECKPOINT_FILE)")
    return ChainReport(count, per_file=tuple(len(found) for found in per_file.values()))


@dataclass
class _Walk:
    count: int = 0
    last_id: int = 0
    seen: dict[int, str] = field(default_factory=dict)
    problem: str = ""
    event_id: int | None = None


def _walk(keys: AuditKeys | None, checkpoints: list[Checkpoint], chunk_size: int) -> _Walk:
    """Every event in id order, then the chain-head row; the first problem stops it."""
    keyed_from = min(
        (c.keyed_from for c in checkpoints if c.keyed_from and not c.problem), default=None
    )
    # The hashes the checkpoints name, collected on the way (no query per checkpoint).
    wanted = {c.head_id for c in checkpoints if not c.problem}
    walked = _Walk()
    prev: AuditEvent | None = None
    for event in AuditEvent.objects.order_by("id").iterator(chunk_size=chunk_size):
        walked.count += 1
        problem = _event_problem(event, prev, keys, keyed_from)
        if problem:
            walked.problem, walked.event_id = problem, event.id
            return walked
        if event.id in wanted:
            walked.seen[event.id] = event.hash
        prev = event
    head = AuditChainHead.objects.filter(pk=AuditChainHead.SINGLETON_ID).first()
    last_id, last_hash = (prev.id, prev.hash) if prev else (0, GENESIS_HASH)
    walked.last_id = last_id
    if head is None and prev is not None:
        walked.problem = "the chain head row is missing (audit_auditchainhead)"
    elif head is not None and (head.last_id, head.last_hash) != (last_id, last_hash):
        walked.problem = (
            f"the chain ends at event #{last_id} but its head records event #{head.last_id}"
            f" (hash {head.last_hash[:12]}…): events at the end were deleted or altered"
        )
        walked.event_id = last_id or None
    return walked


def _file_problem(path: Path, found: list[Checkpoint], events: int) -> tuple[str, None]:
    if found:
        return "", None
    state = "is empty" if path.exists() else "is missing"
    return (
        f"the checkpoint file {path} {state}: the chain has {events} events and nothing "
        "there vouches for them (it was deleted or emptied, or the setting points elsewhere)",
        None,
    )


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
    """What the (intact, contiguous) chain contradicts in one file of checkpoints.
    `seen`: the hash of each checkpointed event the walk found."""
    problem = _links_problem(checkpoints) or next(
        (p for c in checkpoints if (p := _key_problem(c, keys) or document_problem(c, keys))),
        "",
    )
    if problem:
        return problem, None
    # Events gone from the end: the newest checkpoint past the chain's end says how many.
    beyond = [c for c in checkpoints if c.head_id > chain_end]
    if beyond:
        newest = max(beyond, key=lambda c: c.head_id)
        return head_problem(newest, None, chain_end), newest.head_id
    # Events altered: the oldest checkpoint that no longer holds, and the last one before
    # it that still does, bound the first altered event.
    holding: Checkpoint | None = None
    for checkpoint in checkpoints:
        problem = head_problem(checkpoint, seen.get(checkpoint.head_id), chain_end)
        if not problem:
            if checkpoint.head_id and (holding is None or checkpoint.head_id > holding.head_id):
                holding = checkpoint
            continue
        first = holding.head_id + 1 if holding else 1
        span = f"#{first}" if first == checkpoint.head_id else f"#{first}–#{checkpoint.head_id}"
        since = f"{holding.describe()} still holds at event #{holding.head_id}; " if holding else ""
        return f"{problem}; {since}the first altered event is one of {span}", checkpoint.head_id
    return "", None


def _links_problem(checkpoints: list[Checkpoint]) -> str:
    previous_digest = ""
    for checkpoint in checkpoints:
        if checkpoint.problem:
            return f"{checkpoint.describe()}: {checkpoint.problem}"
        named = checkpoint.document.get("previous", "")
        if previous_digest and named != previous_digest:
            return (
                f"{checkpoint.describe()} does not follow the checkpoint before it in the "
                "file: checkpoints were removed or reordered"
            )
        previous_digest = checkpoint.digest
    return ""


def _key_problem(checkpoint: Checkpoint, keys: AuditKeys | None) -> str:
    """A genesis checkpoint names the key the chain started with."""
    if not checkpoint.genesis or keys is None:
        return ""
    named = str(checkpoint.document.get("public_key", ""))
    if named == keys.public_key_hex:
        return ""
    return (
        f"{checkpoint.describe()} says the chain is keyed with audit key "
        f"{checkpoint.document.get('key_id', '?')} (public key {named[:16]}…), but "
        f"{key_path()} holds key {keys.key_id} (public key {keys.public_key_hex[:16]}…): "
        "the key was replaced, and the history rewritten under the new one"
    )


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
