"""How much specadmin takes from a host, and how much of that it keeps.

A host's output is not ours to trust: a unit file may be 200 MB or a FIFO, a tool may
print without end, a line may hold anything. So every read is bounded where it happens
(docs/architecture.md, "Operations"):
- files: `stat` first, only a regular file is opened, at most a limit is read, and a file
  over it is refused by name and size (`Transport.read_file`);
- commands: each stream is capped while it is drained, the rest counted and dropped
  (`CappedBuffer`; `CommandResult.stdout_dropped` / `stderr_dropped`);
- text copied into the database or an audit payload: `clip_text` / `clip_json`, with a
  marker that says how much was left out.

Pure Python (no Django): the transports use it, and so do the services that store what
they return.
"""

from __future__ import annotations

from typing import Any

MIB = 1024 * 1024

# The largest file a step reads whole: a `vllm bench serve` result (a few hundred KB per
# concurrency level). Unit files have their own, smaller limit (push.MAX_UNIT_BYTES).
MAX_READ_BYTES = 16 * MIB
# The largest legitimate output of one command: `journalctl -o json --all` of one batch of
# the journal check (5,000 entries of 1-3 KB each). Memory per command stays under
# MAX_STDOUT_BYTES + MAX_STDERR_BYTES whatever the host prints.
MAX_STDOUT_BYTES = 16 * MIB
# stderr is only ever shown as a message: its first and last half MiB say what went wrong.
MAX_STDERR_BYTES = 1 * MIB
# One text from a host as stored in a column or shown on a page (a probe error, a reason).
STORED_TEXT_CHARS = 20_000
# A step's whole log (a readiness wait logs up to 200 journal lines of its own).
STORED_LOG_CHARS = 200_000
# Each string inside a stored JSON result, a step's reads or an audit payload: audit
# events are append-only and kept forever, so nothing a host prints may grow them much.
STORED_STRING_CHARS = 4_000


class CappedBuffer:
    """The bytes of one stream, at most `limit` of them kept while it is read: the first
    `limit - tail` and the last `tail`; `dropped` counts what fell between."""

    def __init__(self, limit: int, *, tail: int = 0) -> None:
        if not 0 <= tail <= limit:
            raise ValueError("tail must be between 0 and limit")
        self.limit = limit
        self._head_limit = limit - tail
        self._tail_limit = tail
        self._head = bytearray()
        self._tail = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> None:
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        if self._tail_limit == 0:
            self.dropped += len(chunk)
            return
        self._tail += chunk
        extra = len(self._tail) - self._tail_limit
        if extra > 0:
            del self._tail[:extra]
            self.dropped += extra

    def __len__(self) -> int:
        return len(self._head) + len(self._tail)

    def value(self, *, stream: str = "output") -> bytes:
        """What was kept; where bytes were dropped, a marker line between head and tail."""
        if not self.dropped:
            return bytes(self._head) + bytes(self._tail)
        marker = dropped_marker(self.dropped, stream, self.limit).encode()
        return bytes(self._head) + marker + bytes(self._tail)

    def head(self) -> bytes:
        """The kept bytes without any marker (for parsers: the output as printed, cut).
        One copy of the kept bytes, no more (the buffer may hold MAX_STDOUT_BYTES)."""
        if self.dropped or not self._tail:
            return bytes(self._head)
        return bytes(self._head) + bytes(self._tail)


def output_buffers() -> tuple[CappedBuffer, CappedBuffer]:
    """A command's (stdout, stderr): stdout keeps its head (parsers read from the start),
    stderr its head and tail (a message's first error and its last line)."""
    return CappedBuffer(MAX_STDOUT_BYTES), CappedBuffer(
        MAX_STDERR_BYTES, tail=MAX_STDERR_BYTES // 2
    )


def dropped_marker(count: int, what: str, limit: int) -> str:
    """The line that stands for dropped bytes: how many, and the limit that dropped them."""
    return f"\n[… {count:,} bytes of {what} not kept: specadmin keeps {limit:,} …]\n"


def clip_text(text: str, limit: int = STORED_TEXT_CHARS) -> str:
    """`text`, or its beginning and end with a marker saying how many characters are left
    out between them (the first lines say what happened, the last how it ended)."""
    if len(text) <= limit:
        return text
    marker_room = 80
    keep = max(limit - marker_room, 2)
    head, tail = keep - keep // 3, keep // 3
    left_out = len(text) - head - tail
    return f"{text[:head]}\n[… {left_out:,} characters not kept …]\n{text[len(text) - tail :]}"


def clip_json(value: Any, limit: int = STORED_STRING_CHARS) -> Any:
    """A JSON-like value with every string in it clipped by `clip_text` (keys included)."""
    if isinstance(value, str):
        return clip_text(value, limit)
    if isinstance(value, dict):
        return {clip_text(str(k), limit): clip_json(v, limit) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clip_json(v, limit) for v in value]
    return value


__all__ = [
    "MAX_READ_BYTES",
    "MAX_STDERR_BYTES",
    "MAX_STDOUT_BYTES",
    "STORED_LOG_CHARS",
    "STORED_STRING_CHARS",
    "STORED_TEXT_CHARS",
    "CappedBuffer",
    "clip_json",
    "clip_text",
    "dropped_marker",
    "output_buffers",
]
