"""One JSON or CSV download of comparison rows, for every results page that exports (a
host's benchmarks, versions compared on a host, a trial): the same columns, headers in the
names a person reads, lists (acceptance per draft position) joined in one cell."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from typing import Any

from django.http import HttpResponse, JsonResponse


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, list):
        return " / ".join(f"{v:.3f}" for v in value)
    return value


def export_response(
    body: dict[str, Any], columns: Sequence[tuple[str, str]], *, stem: str, fmt: str
) -> HttpResponse:
    """`body` ({"rows": [...], …}) as `stem`.json, or its rows as `stem`.csv."""
    if fmt == "json":
        response: HttpResponse = JsonResponse(body, json_dumps_params={"indent": 1})
    else:
        out = io.StringIO()
        writer = csv.writer(out)
        writer.writerow([header for _, header in columns])
        for row in body["rows"]:
            writer.writerow([_cell(row.get(key)) for key, _ in columns])
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{stem}.{fmt}"'
    return response


__all__ = ["export_response"]
