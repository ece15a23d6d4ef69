"""Checking the audit chain: recompute every hash and follow every link, in id order."""

from __future__ import annotations

from dataclasses import dataclass

from audit.models import GENESIS_HASH, AuditChainHead, AuditEvent


@dataclass(frozen=True)
class ChainReport:
    """The outcome of a walk: how many events were read and the first problem, if any."""

    events: int
    problem: str = ""
    event_id: int | None = None

    @property
    def ok(self) -> bool:
        return not self.problem

    def __str__(self) -> str:
        if self.ok:
            return f"OK: {self.events} events, chain intact"
        return f"BROKEN: {self.problem}"


def verify_chain(*, chunk_size: int = 2000) -> ChainReport:
    """Walk the whole chain and stop at the first broken link.

    Content is checked before the link, so an edited row is named itself; a row edited and
    re-hashed is caught by its successor's `prev_hash`; a deleted row leaves a gap in the
    ids and a `prev_hash` that points nowhere; rows deleted from the end are caught by the
    chain head, which records the newest event.
    """
    count = 0
    prev: AuditEvent | None = None
    events = AuditEvent.objects.order_by("id").iterator(chunk_size=chunk_size)
    for event in events:
        count += 1
        if event.hash != event.compute_hash():
            return ChainReport(
                count, f"{_describe(event)}: stored hash does not match its content", event.id
            )
        expected_prev = prev.hash if prev else GENESIS_HASH
        if event.prev_hash != expected_prev:
            return ChainReport(count, _link_problem(event, prev), event.id)
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
    return ChainReport(count)


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
    return f"{_describe(event)}: prev_hash does not match event #{prev.id}{gap}"
