"""The fleet, the incidents and a host's live state. Thin: reads are `watchdog.selectors`,
the one write (taking a host's text in) is `watchdog.services`."""

from __future__ import annotations

import re
from typing import cast
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from deploys.ids import row_id
from deploys.models import Host
from deploys.permissions import REQUEST_DEPLOY, VIEW_HOST
from specadmin.access import MissingPermission, requires
from units.masking import can_see_secrets, mask_text
from watchdog import selectors
from watchdog.forms import WatchSettingsForm
from watchdog.models import HostWatch, Incident
from watchdog.services import approved_push, save_watch_settings, take_in_host_text

CHANGE_PROFILE = "units.change_serviceprofile"
CHANGE_WATCH = "watchdog.change_hostwatch"
STATES = ("open", "closed", "all")


@require_GET
@requires(VIEW_HOST)
def fleet(request: HttpRequest) -> HttpResponse:
    return render(request, "watchdog/fleet.html", {"rows": selectors.fleet()})


@require_GET
@requires(VIEW_HOST)
def fleet_table(request: HttpRequest) -> HttpResponse:
    """The fleet table alone: the page asks for it every few seconds (live/_poll.html)."""
    return render(request, "watchdog/_fleet_table.html", {"rows": selectors.fleet()})


@require_GET
@requires(VIEW_HOST)
def incident_list(request: HttpRequest) -> HttpResponse:
    state = request.GET.get("state", "open")
    if state not in STATES:
        state = "open"
    host = None
    wanted = request.GET.get("host", "")
    if re.fullmatch(r"[0-9]{1,18}", wanted):  # str.isdigit() takes "²", which int() refuses
        host = Host.objects.filter(pk=int(wanted)).first()
    return render(
        request,
        "watchdog/incident_list.html",
        {
            "incidents": selectors.incidents(state=state, host=host)[:200],
            "state": state,
            "states": STATES,
            "host": host,
        },
    )


def _request_url(version_pk: int, incident: Incident) -> str:
    """The new-request page, filled in with this version for the incident's host and unit."""
    query = {
        "profile_version": version_pk,
        "host": incident.host_id,
        "unit_name": incident.unit_name,
    }
    return reverse("deploys:request_new") + "?" + urlencode(query)


@require_GET
@requires(VIEW_HOST)
def incident_detail(request: HttpRequest, pk: int) -> HttpResponse:
    incident = get_object_or_404(Incident.objects.select_related("host"), pk=pk)
    context: dict[str, object] = {"incident": incident}
    shown = (lambda t: t) if can_see_secrets(request.user) else mask_text
    if incident.kind == Incident.Kind.DRIFT and incident.evidence.get("path"):
        # A drop-in: its path and text; fixed on the host, or adopted with a new deploy.
        context["drop_in"] = {
            "path": str(incident.evidence["path"]),
            "text": shown(str(incident.evidence.get("text") or "")),
            "note": str(incident.evidence.get("note") or ""),
        }
    elif incident.kind == Incident.Kind.DRIFT:
        diff = str(incident.evidence.get("diff") or "")
        context["diff"] = shown(diff)
        push = approved_push(incident)
        version = push.request.profile_version if push and push.request else None
        context["version"] = version
        if version is not None and incident.is_open:
            query = urlencode(
                {
                    "profile_version": version.pk,
                    "host": incident.host_id,
                    "unit_name": incident.unit_name,
                }
            )
            context["restore_url"] = reverse("deploys:request_new") + "?" + query
        context["can_request"] = request.user.has_perm(REQUEST_DEPLOY)
        context["can_take_in"] = request.user.has_perm(CHANGE_PROFILE) and bool(
            incident.evidence.get("host_sha256")
        )
    return render(request, "watchdog/incident_detail.html", context)


@require_POST
@requires(VIEW_HOST, CHANGE_PROFILE)
def incident_take_in(request: HttpRequest, pk: int) -> HttpResponse:
    incident = get_object_or_404(Incident.objects.select_related("host"), pk=pk)
    try:
        result = take_in_host_text(incident=incident, actor=cast(AbstractBaseUser, request.user))
    except ValidationError as exc:
        messages.error(request, "Not taken in: " + " ".join(exc.messages))
        return redirect("watchdog:incident_detail", pk=incident.pk)
    version = result.version
    said = "is now" if result.created else "was already"
    messages.success(
        request,
        f"The host's text {said} version {version.number} of {version.profile.name}; "
        "request its deploy to make it the approved one.",
    )
    return redirect(_request_url(version.pk, incident))


@require_GET
@requires(VIEW_HOST)
def host_live(request: HttpRequest, pk: int) -> HttpResponse:
    """The host page's live unit state and journal tail, read now; polled by the page."""
    host = get_object_or_404(Host, pk=pk)
    live = selectors.host_live(host)
    shown = (lambda t: t) if can_see_secrets(request.user) else mask_text
    for unit in live.units:
        unit.journal = [shown(line) for line in unit.journal]
    return render(request, "watchdog/_host_live.html", {"host": host, "live": live, "poll": True})


@requires(VIEW_HOST)
def watch_settings(request: HttpRequest, pk: int) -> HttpResponse:
    """A host's watch settings: shown to viewers, changed (audited) by operators and
    admins (`watchdog.change_hostwatch`)."""
    # row_id: a path number beyond the database's integers is no row, not a 500.
    watch = get_object_or_404(HostWatch.objects.select_related("host"), host_id=row_id(pk) or 0)
    can_edit = request.user.has_perm(CHANGE_WATCH)
    if request.method == "POST":
        if not can_edit:
            raise MissingPermission([CHANGE_WATCH])
        # A blank instance: validation must not overwrite `watch`, whose values are the
        # audit's "from".
        form = WatchSettingsForm(request.POST, instance=HostWatch(pk=watch.pk))
        if form.is_valid():
            changes = save_watch_settings(
                watch=watch, values=form.values(), actor=cast(AbstractBaseUser, request.user)
            )
            said = ", ".join(sorted(changes)) if changes else "nothing changed"
            messages.success(request, f"Watch settings of {watch.host.name} saved ({said}).")
            return redirect("watchdog:watch_settings", pk=pk)
    else:
        form = WatchSettingsForm(instance=watch)
    return render(
        request,
        "watchdog/watch_settings.html",
        {"watch": watch, "host": watch.host, "form": form, "can_edit": can_edit},
    )
