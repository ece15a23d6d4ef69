"""The audit secret: a file outside the database, from which the chain's HMAC key and the
checkpoints' Ed25519 signing key are derived.

Someone who can write the database but not read this file cannot compute a valid event
hash (HMAC-SHA256, RFC 2104) nor sign a checkpoint, so editing a row and recomputing the
hashes after it no longer verifies. The file lives beside `SECRET_KEY_FILE` (or in `var/`)
and must be backed up apart from the database: with the database alone, history cannot be
forged; without the file, keyed history cannot be verified.

One 32-byte random secret, two keys derived with HKDF-SHA256 (RFC 5869, `cryptography`'s
`HKDF`), so one file is all an operator keeps. The key id (the first 16 hex digits of
sha256 over the chain key) is stored with every keyed event: a wrong key file is then
named as such instead of showing up as "every event altered".
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from django.conf import settings

SECRET_BYTES = 32
_CHAIN_INFO = b"specadmin audit chain hmac-sha256 v2"
_CHECKPOINT_INFO = b"specadmin audit checkpoint ed25519 v1"


class AuditKeyError(Exception):
    """The audit key file is missing where history needs it, unreadable, or too open."""


@dataclass(frozen=True)
class AuditKeys:
    chain_key: bytes
    signing_key: Ed25519PrivateKey
    path: Path

    @property
    def key_id(self) -> str:
        return hashlib.sha256(self.chain_key).hexdigest()[:16]

    def mac(self, data: bytes) -> str:
        return hmac.new(self.chain_key, data, hashlib.sha256).hexdigest()

    @property
    def public_key(self) -> Ed25519PublicKey:
        return self.signing_key.public_key()

    @property
    def public_key_hex(self) -> str:
        """What a remote verifier needs to check checkpoints (and cannot sign with)."""
        return self.public_key.public_bytes(Encoding.Raw, PublicFormat.Raw).hex()


def key_path() -> Path:
    return Path(settings.AUDIT_KEY_FILE)


def _derive(secret: bytes, info: bytes) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(secret)


def _parse(path: Path, text: str) -> bytes:
    try:
        secret = bytes.fromhex(text.strip())
    except ValueError:
        secret = b""
    if len(secret) != SECRET_BYTES:
        raise AuditKeyError(
            f"{path} is not a specadmin audit key ({SECRET_BYTES * 2} hex digits expected)"
        )
    return secret


def _check_mode(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise AuditKeyError(
            f"{path} is readable or writable by others (mode {mode:04o}): "
            f"run `chmod 600 {path}`; anyone who reads it can forge audit history"
        )


@lru_cache(maxsize=8)
def _load(path: Path) -> AuditKeys:
    _check_mode(path)
    secret = _parse(path, path.read_text(encoding="ascii", errors="replace"))
    seed = _derive(secret, _CHECKPOINT_INFO)
    return AuditKeys(
        chain_key=_derive(secret, _CHAIN_INFO),
        signing_key=Ed25519PrivateKey.from_private_bytes(seed),
        path=path,
    )


def load_keys() -> AuditKeys | None:
    """The keys from the configured file, or None when it does not exist."""
    path = key_path()
    if not path.exists():
        return None
    return _load(path)


def create_keys() -> AuditKeys:
    """Write a new secret (mode 0600) and return its keys; never overwrites one.

    Written whole to a temp file, then hard-linked into place (link(2) fails if the name
    exists): two processes creating it at once both end up with the first one, complete.
    """
    path = key_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as fh:
            fh.write(os.urandom(SECRET_BYTES).hex() + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        with contextlib.suppress(FileExistsError):  # another process was first: use its file
            os.link(temp, path)
    finally:
        temp.unlink(missing_ok=True)
    return _load(path)


def forget_cached_keys() -> None:
    """Re-read key files on next use (tests; an operator restoring a key from backup)."""
    _load.cache_clear()


__all__ = [
    "AuditKeyError",
    "AuditKeys",
    "create_keys",
    "forget_cached_keys",
    "key_path",
    "load_keys",
]
