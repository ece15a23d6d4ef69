"""Row ids from URLs and forms, checked before they reach the database.

Django's `<int:…>` converter accepts any number of digits, `str.isdigit()` accepts "²",
and SQLite refuses integers past 2**63 - 1 with an OverflowError (a 500) where Django's own
range check does not apply (lookups through a foreign key). An id that cannot name a row
is no row: None here, a 404 or "no such choice" for the page.
"""

from __future__ import annotations

MAX_ROW_ID = 2**63 - 1  # the largest id a BigAutoField holds (SQLite, PostgreSQL bigint)


def row_id(text: str | int | None) -> int | None:
    """The id `text` names (ASCII digits only, within range), or None."""
    if isinstance(text, int):
        return text if 0 <= text <= MAX_ROW_ID else None
    if not text or len(text) > 19 or not (text.isascii() and text.isdigit()):
        return None
    value = int(text)
    return value if value <= MAX_ROW_ID else None


__all__ = ["MAX_ROW_ID", "row_id"]
