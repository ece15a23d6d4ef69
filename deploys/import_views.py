"""Import a unit that runs on a host (the probe lists them) into a profile; the import's
own page (`units:import_detail`) then shows the result. Thin: the work is
`deploys.services.unit_imports.import_host_unit`."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from deploys.models import Host
from deploys.permissions import VIEW_HOST
from deploys.services.unit_imports import import_host_unit
from specadmin.access import requires

ADD_PROFILE = "units.add_serviceprofile"


@require_POST
@requires(VIEW_HOST, ADD_PROFILE)
def host_import_unit(request: HttpRequest, pk: int) -> HttpResponse:
    host = get_object_or_404(Host, pk=pk)
    unit_name = request.POST.get("unit_name", "")[:300]
    try:
        result = import_host_unit(host=host, unit_name=unit_name, actor=request.user)
    except ValidationError as exc:
        messages.error(request, f"Not imported: {' '.join(exc.messages)}")
        return redirect("deploys:host_detail", pk=host.pk)
    if result.created:
        messages.success(
            request,
            f"Imported {unit_name} from {host.name} as {result.profile.name} v1. The file on "
            "the host is unchanged; specadmin replaces it only after an admin adopts it here "
            "and a deploy request of the profile is approved.",
        )
    else:
        messages.info(request, "This unit was imported before; nothing new was created.")
    return redirect("units:import_detail", pk=result.record.pk)
