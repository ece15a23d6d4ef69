"""Requests carrying a NUL character in their path, query or form are refused with a 400.

No value specadmin keeps may hold one: PostgreSQL text cannot ("PostgreSQL text fields
cannot contain NUL (0x00) bytes", a 500 from psycopg), SQLite stores it and pages then
show a value that differs from what was typed. Django's form fields refuse it
(`ProhibitNullCharactersValidator`), but a view that reads `request.GET` or a path
converter directly would pass it on to a query. Refusing the request up front covers
them all (docs/security.md, "Bad input: NUL characters")."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse

NUL = "\x00"
MESSAGE = "The request holds a NUL character (in its path, query or form): refused."


def _holds_nul(request: HttpRequest) -> bool:
    if NUL in request.path:
        return True
    forms: Iterable[tuple[str, list[str]]] = request.GET.lists()
    if request.method == "POST" and request.content_type in (
        "application/x-www-form-urlencoded",
        "multipart/form-data",
    ):
        forms = [*forms, *request.POST.lists()]
    return any(NUL in key or any(NUL in v for v in values) for key, values in forms)


class RefuseNulCharacters:
    """Django middleware: a request with NUL in its path, query or form gets a 400 (JSON
    under /api/v1/, as the API's other errors: docs/api.md, "Errors")."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _holds_nul(request):
            if request.path.startswith("/api/v1/"):
                return JsonResponse({"detail": MESSAGE, "errors": {}}, status=400)
            return HttpResponseBadRequest(MESSAGE, content_type="text/plain; charset=utf-8")
        return self.get_response(request)


__all__ = ["RefuseNulCharacters"]
