"""Errors as JSON with a 4xx status, never a 5xx (docs/api.md, "Errors"): DRF's own,
plus Django's ValidationError (what the services raise: the same messages as the web
forms, per field) and a host that cannot be read (409: the request was not made)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from rest_framework import status
from rest_framework.exceptions import APIException
from rest_framework.response import Response
from rest_framework.views import exception_handler

from hostops.channel import TransportError


class BodyTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "too_large"


def _errors(exc: ValidationError) -> dict[str, Any]:
    if hasattr(exc, "error_dict"):
        fields = {k: v for k, v in exc.message_dict.items() if k != "__all__"}
        detail = " ".join(exc.message_dict.get("__all__", [])) or "Some fields are not valid."
        return {"detail": detail, "errors": fields}
    return {"detail": " ".join(exc.messages), "errors": {}}


def _texts(value: Any) -> list[str]:
    """DRF's error details (lists, nested dicts of a DictField) as plain sentences."""
    if isinstance(value, dict):
        return [f"{k}: {t}" for k, v in value.items() for t in _texts(v)]
    if isinstance(value, list):
        return [t for v in value for t in _texts(v)]
    return [str(value)]


def _one_shape(data: Any) -> dict[str, Any]:
    """DRF's `{field: [..]}` or `[..]` as `{"detail": …, "errors": {field: [..]}}`."""
    if isinstance(data, dict) and set(data) == {"detail"}:
        return {"detail": str(data["detail"])}
    if not isinstance(data, dict):
        return {"detail": " ".join(_texts(data)), "errors": {}}
    general = _texts(data.get("non_field_errors", []))
    fields = {k: _texts(v) for k, v in data.items() if k != "non_field_errors"}
    return {"detail": " ".join(general) or "Some fields are not valid.", "errors": fields}


def handle(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, ValidationError):
        return Response(_errors(exc), status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, TransportError):
        return Response(
            {"detail": f"Cannot reach the host: {exc}"}, status=status.HTTP_409_CONFLICT
        )
    response = exception_handler(exc, context)
    if response is not None:
        response.data = _one_shape(response.data)
    return response
