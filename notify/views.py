"""Each person's notification settings page: which events they get by e-mail, their
webhooks, the hosts they muted, and their latest notifications (state only: what a
receiver answered is for admins, in the admin)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from notify import selectors, services
from notify.forms import EmailEventsForm, MuteForm, WebhookForm
from notify.models import Notification

RECENT = 20


def _page(request: HttpRequest, **forms: Any) -> HttpResponse:
    user = request.user
    may_follow = user.has_perm(services.VIEW_HOST)
    context = {
        "email_form": forms.get("email_form")
        or EmailEventsForm(initial={"events": sorted(selectors.email_events(user=user))}),
        "webhook_form": forms.get("webhook_form") or WebhookForm(may_follow_hosts=may_follow),
        "mute_form": forms.get("mute_form")
        or MuteForm(initial={"hosts": list(selectors.muted_hosts(user=user))}),
        "webhooks": selectors.user_webhooks(user=user),
        "recent": Notification.objects.filter(user=user).select_related("host")[:RECENT],
    }
    status = 400 if forms else 200
    return render(request, "notify/settings.html", context, status=status)


def _save_email(request: HttpRequest) -> HttpResponse | None:
    form = EmailEventsForm(request.POST)
    if not form.is_valid():
        return _page(request, email_form=form)
    services.set_email_events(user=request.user, events=form.cleaned_data["events"])
    messages.success(request, "Your e-mail settings are saved.")
    return None


def _add_webhook(request: HttpRequest) -> HttpResponse | None:
    user = request.user
    form = WebhookForm(request.POST, may_follow_hosts=user.has_perm(services.VIEW_HOST))
    if not form.is_valid():
        return _page(request, webhook_form=form)
    try:
        services.webhook_add(
            owner=user,
            url=form.cleaned_data["url"],
            slack=form.cleaned_data["slack"],
            events=form.cleaned_data["events"],
            host=form.cleaned_data.get("host"),
        )
    except ValidationError as exc:
        for field, errors in exc.message_dict.items():
            for error in errors:
                form.add_error(field if field in form.fields else None, error)
        return _page(request, webhook_form=form)
    messages.success(request, "The webhook is added.")
    return None


def _save_mutes(request: HttpRequest) -> HttpResponse | None:
    form = MuteForm(request.POST)
    if not form.is_valid():
        return _page(request, mute_form=form)
    services.set_muted_hosts(user=request.user, hosts=form.cleaned_data["hosts"])
    messages.success(request, "Your muted hosts are saved.")
    return None


_FORMS = {"email": _save_email, "webhook": _add_webhook, "mute": _save_mutes}


@login_required
def settings_page(request: HttpRequest) -> HttpResponse:
    """GET: the page; POST: one of its three forms (`form` says which). A form with errors
    is shown again with them (400); a saved one redirects back."""
    if request.method != "POST":
        return _page(request)
    save = _FORMS.get(request.POST.get("form", ""))
    if save is None:
        messages.error(request, "Nothing was saved: the form sent was not one of this page's.")
        return redirect("notify:settings")
    return save(request) or redirect("notify:settings")


@login_required
@require_POST
def webhook_delete(request: HttpRequest, pk: int) -> HttpResponse:
    if services.webhook_delete(owner=request.user, webhook_id=pk):
        messages.success(request, "The webhook is removed.")
    else:
        messages.error(request, "No such webhook of yours.")
    return redirect("notify:settings")
