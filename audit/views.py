"""The history page and its exports: thin views over the selectors."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from audit.exports import csv_lines, json_chunks
from audit.forms import HistoryFilterForm
from audit.models import AuditEvent
from audit.selectors import audit_event_list, audit_kind_choices
from specadmin.access import requires

PAGE_SIZE = 50
EXPORT_CHUNK = 2000
VIEW_PERMISSION = "audit.view_auditevent"


@requires(VIEW_PERMISSION)
def history(request: HttpRequest) -> HttpResponse:
    form = HistoryFilterForm(request.GET)
    if not form.is_valid():
        return _refused(request, form)
    events = audit_event_list(filters=form.filters())
    page = Paginator(events, PAGE_SIZE).get_page(request.GET.get("page"))
    context = {"form": form, "page": page, "kinds": audit_kind_choices()}
    return render(request, "audit/history.html", context)


def _refused(request: HttpRequest, form: HistoryFilterForm) -> HttpResponse:
    """Bad filters (a page or an export): the history page, 400, saying which is wrong."""
    context = {"form": form, "page": None, "kinds": audit_kind_choices()}
    return render(request, "audit/history.html", context, status=400)


@requires(VIEW_PERMISSION)
def export_csv(request: HttpRequest) -> HttpResponse:
    return _export(request, csv_lines, "text/csv; charset=utf-8", "csv")


@requires(VIEW_PERMISSION)
def export_json(request: HttpRequest) -> HttpResponse:
    return _export(request, json_chunks, "application/json", "json")


def _export(
    request: HttpRequest,
    render_rows: Callable[[Iterable[AuditEvent]], Iterator[str]],
    content_type: str,
    extension: str,
) -> HttpResponse:
    form = HistoryFilterForm(request.GET)
    if not form.is_valid():
        return _refused(request, form)
    events = audit_event_list(filters=form.filters()).iterator(chunk_size=EXPORT_CHUNK)
    response = StreamingHttpResponse(render_rows(events), content_type=content_type)
    stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
    response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{extension}"'
    return response
