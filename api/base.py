"""What every API view shares: the body limit, throttles before permissions (so a
refused caller is throttled too), and the audit of each call (api.audit_calls)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import SAFE_METHODS
from rest_framework.request import Request
from rest_framework.response import Response

from api.audit_calls import audit_call, audit_read
from api.errors import BodyTooLarge


def _length(request: Request) -> int:
    try:
        return int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


class ApiView(GenericAPIView):
    read_perms: ClassVar[tuple[str, ...]] = ()
    write_perms: ClassVar[tuple[str, ...]] = ()
    read_only_post: ClassVar[bool] = False  # a POST that writes nothing (lint)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """DRF's `initial()`, but with the throttles before the permissions."""
        self.audited: dict[str, Any] = {}
        if _length(request) > settings.API_MAX_BODY_BYTES:
            raise BodyTooLarge(
                f"The request body is larger than {settings.API_MAX_BODY_BYTES} bytes."
            )
        self.format_kwarg = self.get_format_suffix(**kwargs)
        neg = self.perform_content_negotiation(request)
        request.accepted_renderer, request.accepted_media_type = neg
        version, scheme = self.determine_version(request, *args, **kwargs)
        request.version, request.versioning_scheme = version, scheme
        self.perform_authentication(request)
        self.check_throttles(request)
        self.check_permissions(request)

    def finalize_response(
        self, request: Request, response: Response, *args: Any, **kwargs: Any
    ) -> Response:
        response = super().finalize_response(request, response, *args, **kwargs)
        user = getattr(request, "_user", None)
        if user is None or not user.is_authenticated or response.status_code == 429:
            return response  # nobody to name, or a flood already refused
        if request.method not in SAFE_METHODS:
            audit_call(request, response, getattr(self, "audited", {}))
        elif response.status_code < 400:
            audit_read(request)
        return response
