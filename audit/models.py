"""The append-only audit log: one hash-chained row per state change.

Every `AuditEvent` stores `prev_hash` (the hash of the event before it) and `hash` (over a
canonical JSON form of all its fields, `prev_hash` included), so editing, deleting or
reordering a row breaks the chain and `manage.py verifyaudit` names the first broken link.

Two hash schemes (the `scheme` column):
- 2, keyed (every event written since): HMAC-SHA256 with a key from a file outside the
  database (`audit.keys`), so someone who can write the database cannot recompute hashes
  after an edit. `key_id` names the key.
- 1, legacy (NULL in `scheme`): plain sha256, as written before keys existed. Those rows
  keep their hashes (exports made then still check); the first keyed event's HMAC covers
  the last legacy hash, so the legacy prefix is anchored by the key too, and no legacy row
  may follow a keyed one. `docs/operations.md` ("Audit history") describes the upgrade.
Signed checkpoints of the chain's head, exported outside the database
(`audit.checkpoints`), catch what no hash can: events deleted from the end.

Rows are written only by `audit.services.record()`, which assigns `id` and `prev_hash` under
a lock. The application refuses updates and deletes here in code; the database refuses them
too (migration 0002: triggers). Nothing holds a real foreign key *to* another row, so audit
rows never block a delete or rename elsewhere, and nothing elsewhere can cascade into them.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC
from enum import StrEnum
from typing import Any, NoReturn

from django.conf import settings
from django.db import models

from audit.keys import AuditKeyError, AuditKeys, key_path, load_keys

GENESIS_HASH = "0" * 64
"""`prev_hash` of the first event: the chain starts from a fixed, well-known value."""

LEGACY_SCHEME = 1
KEYED_SCHEME = 2
"""Part of every hashed document, so a change of the canonical form is detectable."""


class AuditKind(StrEnum):
    """The kinds recorded today. `record()` accepts any dotted lower-case kind, so an app can
    add one without a migration; use these constants to avoid typos."""

    PROFILE_CREATED = "profile.created"
    PROFILE_EDITED = "profile.edited"
    PROFILE_ARCHIVED = "profile.archived"
    PROFILE_UNARCHIVED = "profile.unarchived"
    PROFILE_RESTORED = "profile.restored"
    HOST_ADDED = "host.added"
    HOST_KEY_PRESENTED = "host.key_presented"
    HOST_KEY_PINNED = "host.key_pinned"
    HOST_PROBED = "host.probed"
    HOST_PROBE_FAILED = "host.probe_failed"
    HOST_PROBE_EXECUTABLES_SET = "host.probe_executables_set"
    HOST_CHANGED = "host.changed"
    HOST_ARCHIVED = "host.archived"
    HOST_UNARCHIVED = "host.unarchived"
    DEPLOY_REQUESTED = "deploy.requested"
    DEPLOY_APPROVED = "deploy.approved"
    DEPLOY_REJECTED = "deploy.rejected"
    DEPLOY_EXPIRED = "deploy.expired"
    DEPLOY_VOIDED = "deploy.voided"
    DEPLOY_STARTED = "deploy.started"
    DEPLOY_SUCCEEDED = "deploy.succeeded"
    DEPLOY_FAILED = "deploy.failed"
    JOB_STEP_STARTED = "job.step_started"
    JOB_STEP_FINISHED = "job.step_finished"
    JOB_STEP_FAILED = "job.step_failed"
    UNIT_PUSHED = "unit.pushed"
    UNIT_ADOPTED = "unit.adopted"
    UNIT_REMOVED = "unit.removed"
    ROLLBACK = "rollback"
    # the deploy job (deploys/jobs): who withdrew or cancelled it, how it ended, what it
    # did to processes on the host
    DEPLOY_WITHDRAWN = "deploy.withdrawn"
    DEPLOY_CANCEL_REQUESTED = "deploy.cancel_requested"
    DEPLOY_CANCELLED = "deploy.cancelled"
    DEPLOY_INTERRUPTED = "deploy.interrupted"
    DEPLOY_ROLLED_BACK = "deploy.rolled_back"
    DEPLOY_ROLLBACK_FAILED = "deploy.rollback_failed"
    GPU_PROCESS_SIGNALLED = "gpu.process_signalled"
    HOST_SETTINGS_CHANGED = "host.settings_changed"
    # a task package a worker refused to run: not one of specadmin's tasks
    # (deploys/jobs/allowlist.py; docs/security.md)
    TASK_REFUSED = "task.refused"
    # the API (api/; docs/api.md "What is audited"): tokens, every write call, reads hourly
    API_TOKEN_CREATED = "api.token_created"
    API_TOKEN_REVOKED = "api.token_revoked"
    NOTIFY_WEBHOOK_ADDED = "notify.webhook_added"
    NOTIFY_WEBHOOK_REMOVED = "notify.webhook_removed"
    NOTIFY_SETTINGS_CHANGED = "notify.settings_changed"
    API_CALL = "api.call"
    API_READ = "api.read"


class AuditImmutableError(Exception):
    """Raised when code tries to change or remove audit history."""


def _refuse(what: str) -> NoReturn:
    raise AuditImmutableError(
        f"audit events are append-only: {what} is refused (write with audit.services.record())"
    )


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    """Read-only in bulk: every bulk write path would bypass or break the chain."""

    def update(self, **kwargs: Any) -> NoReturn:
        _refuse("QuerySet.update()")

    def delete(self) -> NoReturn:
        _refuse("QuerySet.delete()")

    def bulk_update(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("QuerySet.bulk_update()")

    def bulk_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("QuerySet.bulk_create() (it skips the chain lock)")

    def update_or_create(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("QuerySet.update_or_create()")


class AuditEvent(models.Model):
    """One state change: who did what to which object, when, and the link to the one before."""

    # Assigned by record() under the chain lock (last id + 1), because the hash covers it.
    id = models.BigIntegerField(primary_key=True)
    at = models.DateTimeField(db_index=True, editable=False)
    # No database constraint and DO_NOTHING: deleting a user must neither be blocked by nor
    # rewrite history (SET_NULL would be an UPDATE, and would change hashed content).
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        related_name="+",
        help_text="Empty for the system and background jobs.",
    )
    actor_name = models.CharField(
        max_length=150, blank=True, help_text="Username at the time, kept across renames."
    )
    kind = models.CharField(max_length=64, db_index=True)
    object_type = models.CharField(max_length=100, blank=True)
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    host_name = models.CharField(max_length=255, blank=True, db_index=True)
    profile_name = models.CharField(max_length=255, blank=True, db_index=True)
    payload = models.JSONField(default=dict, blank=True)
    prev_hash = models.CharField(max_length=64)
    hash = models.CharField(max_length=64, unique=True)
    # Nullable without a default on purpose: SQLite then adds the columns with ALTER TABLE
    # instead of rebuilding the table (which would drop its append-only trigger), and the
    # rows from before keys existed read as NULL = legacy.
    scheme = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="2: HMAC-SHA256 (keyed); empty: legacy sha256"
    )
    key_id = models.CharField(max_length=16, null=True, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-id"]
        indexes = [models.Index(fields=["object_type", "object_id"], name="audit_object_idx")]

    def __str__(self) -> str:
        return f"#{self.id} {self.kind} {self.object_repr}".rstrip()

    @property
    def actor_display(self) -> str:
        return self.actor_name or "system"

    @property
    def payload_json(self) -> str:
        """The payload as indented JSON, for people reading the history page."""
        return json.dumps(self.payload, indent=2, sort_keys=True, ensure_ascii=False)

    @property
    def keyed(self) -> bool:
        return self.scheme == KEYED_SCHEME

    def canonical_document(self) -> dict[str, Any]:
        """Everything the hash covers, in plain JSON types."""
        document = {
            "scheme": self.scheme or LEGACY_SCHEME,
            "id": self.id,
            "at": self.at.astimezone(UTC).isoformat(timespec="microseconds"),
            "actor_id": self.actor_id,
            "actor_name": self.actor_name,
            "kind": self.kind,
            "object_type": self.object_type,
            "object_id": self.object_id,
            "object_repr": self.object_repr,
            "host_name": self.host_name,
            "profile_name": self.profile_name,
            "payload": self.payload,
            "prev_hash": self.prev_hash,
        }
        if self.keyed:
            document["key_id"] = self.key_id
        return document

    def canonical_bytes(self) -> bytes:
        """The canonical document: sorted keys, no whitespace, UTF-8."""
        text = json.dumps(
            self.canonical_document(),
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
            allow_nan=False,
        )
        return text.encode("utf-8")

    def compute_hash(self, keys: AuditKeys | None = None) -> str:
        """HMAC-SHA256 of the canonical document with the audit key (keyed events; `keys`
        default: the configured key file), or its plain sha256 (legacy events)."""
        if not self.keyed:
            return hashlib.sha256(self.canonical_bytes()).hexdigest()
        keys = keys or load_keys()
        if keys is None:
            raise AuditKeyError(f"the audit key file {key_path()} is missing")
        return keys.mac(self.canonical_bytes())

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Insert once, never update; the hash must already match the content."""
        if not self._state.adding:
            _refuse("AuditEvent.save() on an existing event")
        if not self.hash or not self.keyed or self.hash != self.compute_hash():
            _refuse("saving an event whose hash does not match its content")
        kwargs["force_insert"] = True
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> NoReturn:
        _refuse("AuditEvent.delete()")


class AuditChainHead(models.Model):
    """A single row: the lock writers take, and a witness of the newest event.

    PostgreSQL writers `SELECT … FOR UPDATE` this row before reading the last hash, so two
    workers can never chain onto the same predecessor. `last_id`/`last_hash` let
    `verifyaudit` notice events deleted from the *end* of the chain, which no later
    `prev_hash` would reveal.
    """

    SINGLETON_ID = 1

    id = models.PositiveSmallIntegerField(primary_key=True, default=SINGLETON_ID)
    last_id = models.BigIntegerField(default=0)
    last_hash = models.CharField(max_length=64, default=GENESIS_HASH)

    def __str__(self) -> str:
        return f"audit chain head at #{self.last_id}"
