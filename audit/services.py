"""Writing audit history: `record()` is the only way an `AuditEvent` comes into existence."""

from __future__ import annotations

import json
import math
import re
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from django.db import models, transaction
from django.utils import timezone

from audit.checkpoints import write_genesis
from audit.keys import AuditKeyError, AuditKeys, create_keys, key_path, load_keys
from audit.models import GENESIS_HASH, KEYED_SCHEME, AuditChainHead, AuditEvent

if TYPE_CHECKING:
    from django.contrib.auth.models import AbstractBaseUser

KIND_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")

# Payload keys whose words (split on _ - . space and camelCase) contain one of these are
# refused: the audit log is exported and kept forever, so secrets must never reach it.
_SECRET_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "apikey"})
_SECRET_WORD_PAIRS = frozenset({("private", "key"), ("api", "key"), ("access", "key")})
_SECRET_VALUE_MARKERS = ("PRIVATE KEY-----",)
_WORD_SPLIT_RE = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def record(
    *,
    kind: str,
    actor: AbstractBaseUser | None,
    obj: models.Model | None = None,
    object_type: str = "",
    object_id: str = "",
    object_repr: str = "",
    payload: dict[str, Any] | None = None,
    host_name: str = "",
    profile_name: str = "",
) -> AuditEvent:
    """Append one event to the chain and return it.

    `obj` fills `object_type`/`object_id`/`object_repr` unless they are given explicitly.
    Call it inside the transaction of the change it records: if that rolls back, so does
    the event. Raises ValueError for a malformed kind, a payload that is not plain JSON, or
    a payload that looks like it carries a secret.
    """
    if not KIND_RE.fullmatch(kind) or len(kind) > 64:
        raise ValueError(f"audit kind {kind!r} must be dotted lower-case, e.g. 'deploy.approved'")
    clean_payload = _clean_payload({} if payload is None else payload)
    if obj is not None:
        object_type = object_type or obj._meta.label_lower
        object_id = object_id or str(obj.pk)
        object_repr = object_repr or str(obj)
    object_id = str(object_id)
    # SQLite would store an over-long value and PostgreSQL would fail mid-transaction:
    # refuse it here, the same way on both.
    for field, value in [
        ("object_type", object_type),
        ("object_id", object_id),
        ("host_name", host_name),
        ("profile_name", profile_name),
    ]:
        limit = AuditEvent._meta.get_field(field).max_length
        if len(value) > limit:
            raise ValueError(f"audit {field} is longer than {limit} characters: {value[:40]!r}…")

    keys = keys_for_writing()
    with transaction.atomic():
        _lock_chain()
        last = AuditEvent.objects.order_by("-id").only("id", "hash", "scheme").first()
        if last is None or not last.keyed:
            # The chain's first keyed event: anchored outside the database before it exists.
            write_genesis(keys)
        event = AuditEvent(
            id=last.id + 1 if last else 1,
            at=timezone.now(),
            actor=actor,
            actor_name=actor.get_username() if actor is not None else "",
            kind=kind,
            object_type=object_type,
            object_id=object_id,
            object_repr=_truncate(object_repr, 200),
            host_name=host_name,
            profile_name=profile_name,
            payload=clean_payload,
            prev_hash=last.hash if last else GENESIS_HASH,
            scheme=KEYED_SCHEME,
            key_id=keys.key_id,
        )
        event.hash = event.compute_hash(keys)
        event.save()
        AuditChainHead.objects.filter(pk=AuditChainHead.SINGLETON_ID).update(
            last_id=event.id, last_hash=event.hash
        )
    return event


def keys_for_writing() -> AuditKeys:
    """The audit keys; created on first use, but never while keyed history exists without
    its key file (a new key would leave that history unverifiable: restore the file)."""
    keys = load_keys()
    if keys is not None:
        return keys
    if AuditEvent.objects.filter(scheme=KEYED_SCHEME).exists():
        raise AuditKeyError(
            f"the audit key file {key_path()} is missing, but the history has keyed events: "
            "restore the file from its backup (a new key would make that history "
            "unverifiable); nothing was recorded"
        )
    return create_keys()


def _lock_chain() -> None:
    """Serialise writers from reading the last hash until commit.

    PostgreSQL: a row lock on the chain head (created on first use; `ignore_conflicts`
    makes that race-free). SQLite: `select_for_update` is a no-op there, but the
    settings' IMMEDIATE transaction mode already took the database write lock at BEGIN.
    """
    AuditChainHead.objects.bulk_create(
        [AuditChainHead(id=AuditChainHead.SINGLETON_ID)], ignore_conflicts=True
    )
    AuditChainHead.objects.select_for_update().get(pk=AuditChainHead.SINGLETON_ID)


def _clean_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Return the payload as it will read back from the database (plain JSON), or refuse it.

    Round-tripping through `json` here means the hash is computed over exactly what is
    stored: tuples become lists, and anything that is not JSON fails now, not at read time.
    """
    if not isinstance(payload, dict):
        raise ValueError(f"audit payload must be a dict, not {type(payload).__name__}")
    _refuse_secrets(payload, path="payload")
    try:
        text = json.dumps(payload, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"audit payload is not plain JSON: {exc}") from None
    if "\\u0000" in text:
        raise ValueError("audit payload must not contain NUL characters (PostgreSQL rejects them)")
    return _as_stored(json.loads(text))


def _as_stored(value: Any) -> Any:
    """Normalise floats the way PostgreSQL's jsonb reads them back, on every database.

    jsonb keeps numbers as decimals: `1e+20` returns as the integer 100000000000000000000
    and `-0.0` as `0.0`. Hashing the caller's form would then fail verification forever.
    """
    if isinstance(value, dict):
        return {key: _as_stored(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_as_stored(item) for item in value]
    if isinstance(value, float):
        if value == 0:
            return 0.0
        if value.is_integer() and abs(value) >= 1e16:  # repr() switches to exponent form here
            return int(value)
    return value


def _refuse_secrets(value: Any, *, path: str) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _looks_secret(key):
                raise ValueError(
                    f"audit payload key {path}.{key} looks like a secret; "
                    "secrets never go to the audit log (record a fingerprint or a name instead)"
                )
            _refuse_secrets(item, path=f"{path}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _refuse_secrets(item, path=f"{path}[{index}]")
    elif isinstance(value, str) and any(marker in value for marker in _SECRET_VALUE_MARKERS):
        raise ValueError(f"audit payload value {path} contains a private key; refused")
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"audit payload value {path} is {value}, which JSON cannot hold")


def _looks_secret(key: str) -> bool:
    words = [w.lower() for w in _WORD_SPLIT_RE.split(key) if w]
    if any(word in _SECRET_WORDS for word in words):
        return True
    return any(pair in _SECRET_WORD_PAIRS for pair in pairwise(words))


def _truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
