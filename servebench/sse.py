"""Incremental Server-Sent Events decoding for streamed completions.

Follows the SSE format (events end at a blank line, `data:` lines carry the payload, lines
starting with `:` are comments such as keep-alive pings), like vLLM's
`StreamedResponseHandler` in vllm/benchmarks/lib/endpoint_request_func.py, but strict: a
`data:` payload that is neither JSON nor `[DONE]` is an error that says what arrived.
"""

from __future__ import annotations

import json
from typing import Any

DONE = "[DONE]"


class MalformedStream(ValueError):
    """The server sent something that is not a valid completion event."""


class SSEDecoder:
    """Feed raw bytes as they arrive; get back each complete event's decoded payload."""

    __slots__ = ("_buffer",)

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[dict[str, Any] | str]:
        """Payloads of the events completed by `data`: dicts, or the string `[DONE]`."""
        buffer = self._buffer + data
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
        events: list[dict[str, Any] | str] = []
        start = 0
        while (end := buffer.find(b"\n\n", start)) >= 0:
            payload = _event_data(buffer[start:end])
            if payload is not None:
                events.append(payload)
            start = end + 2
        self._buffer = buffer[start:]
        return events

    def close(self) -> list[dict[str, Any] | str]:
        """At end of stream: a last event without its blank line still counts."""
        rest, self._buffer = self._buffer.strip(), b""
        if not rest:
            return []
        payload = _event_data(rest)
        return [] if payload is None else [payload]


def _event_data(block: bytes) -> dict[str, Any] | str | None:
    data_lines = []
    for line in block.split(b"\n"):
        if line.startswith(b"data:"):
            data_lines.append(line[5:].lstrip(b" "))
        elif line and not line.startswith(b":") and b":" not in line:
            raise MalformedStream(f"not an SSE field line: {_snippet(line)}")
        # other fields (event:, id:, retry:) and comments carry no payload we use
    if not data_lines:
        return None
    raw = b"\n".join(data_lines)
    if raw == b"[DONE]":
        return DONE
    try:
        value = json.loads(raw)
    except ValueError as exc:  # JSONDecodeError, or UnicodeDecodeError for bytes not UTF-8
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise MalformedStream(f"event data is not JSON ({why}): {_snippet(raw)}") from None
    if not isinstance(value, dict):
        raise MalformedStream(f"event data is not a JSON object: {_snippet(raw)}")
    return value


def _snippet(raw: bytes, limit: int = 120) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= limit else text[:limit] + "…")
