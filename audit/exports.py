"""CSV and JSON exports of audit history, streamed so a large history never sits in memory."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from typing import Any

from audit.models import AuditEvent

EXPORT_FIELDS = [
    "id",
    "at",
    "actor_id",
    "actor_name",
    "kind",
    "object_type",
    "object_id",
    "object_repr",
    "host_name",
    "profile_name",
    "payload",
    "prev_hash",
    "hash",
    "scheme",
    "key_id",
]
"""Every hashed field plus the hash, so an export can be checked outside specadmin."""

# Spreadsheets run cells that start with these as formulas (CSV injection).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def event_as_dict(event: AuditEvent) -> dict[str, Any]:
    return {
        "id": event.id,
        "at": event.at.isoformat(),
        "actor_id": event.actor_id,
        "actor_name": event.actor_name,
        "kind": event.kind,
        "object_type": event.object_type,
        "object_id": event.object_id,
        "object_repr": event.object_repr,
        "host_name": event.host_name,
        "profile_name": event.profile_name,
        "payload": event.payload,
        "prev_hash": event.prev_hash,
        "hash": event.hash,
        "scheme": event.scheme or 1,
        "key_id": event.key_id or "",
    }


class _Echo:
    """A file-like object whose write() hands the line back, for csv.writer."""

    def write(self, value: str) -> str:
        return value


def csv_lines(events: Iterable[AuditEvent]) -> Iterator[str]:
    """Header, then one line per event; payload as compact JSON in one cell.

    Text cells that a spreadsheet would run as a formula get a leading `'`; the JSON export
    is the byte-faithful one.
    """
    writer = csv.writer(_Echo())
    yield writer.writerow(EXPORT_FIELDS)
    for event in events:
        row = event_as_dict(event)
        row["payload"] = json.dumps(row["payload"], sort_keys=True, separators=(",", ":"))
        yield writer.writerow([_csv_cell(row[field]) for field in EXPORT_FIELDS])


def json_chunks(events: Iterable[AuditEvent]) -> Iterator[str]:
    """A JSON array of event objects, one per line."""
    yield "["
    separator = "\n"
    for event in events:
        yield separator + json.dumps(event_as_dict(event), ensure_ascii=False)
        separator = ",\n"
    yield "\n]\n"


def _csv_cell(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value
    return "" if value is None else value
