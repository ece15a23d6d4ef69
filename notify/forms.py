"""The settings page's forms; the rules themselves are in notify.services, so every caller
is held to them."""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError

from deploys.models import Host
from notify.events import Event
from notify.models import ADDRESS_CHARS
from notify.services import check_webhook_url


def _hosts() -> Any:
    return Host.objects.filter(archived=False).order_by("name")


class EmailEventsForm(forms.Form):
    prefix = "email"  # three forms on one page: their fields' names and ids stay apart
    events = forms.MultipleChoiceField(
        choices=Event.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="E-mail me when",
    )


class WebhookForm(forms.Form):
    prefix = "webhook"
    url = forms.CharField(
        max_length=ADDRESS_CHARS,
        label="Webhook URL",
        help_text="http:// or https://; specadmin POSTs JSON to it and follows no redirect.",
        widget=forms.URLInput(attrs={"placeholder": "https://hooks.example.org/specadmin"}),
    )
    slack = forms.BooleanField(
        required=False, label='Slack-compatible body ({"text": …}) instead of specadmin\'s JSON'
    )
    events = forms.MultipleChoiceField(
        choices=Event.choices,
        initial=list(Event.values),
        widget=forms.CheckboxSelectMultiple,
        label="Send",
        error_messages={"required": "Choose at least one kind of event for the webhook."},
    )
    host = forms.ModelChoiceField(
        queryset=Host.objects.none(),
        required=False,
        empty_label="— my own notifications —",
        label="For",
        help_text="A host: that host's events, whoever they are for (e.g. a team channel).",
    )

    def __init__(self, *args: Any, may_follow_hosts: bool, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if may_follow_hosts:
            self.fields["host"].queryset = _hosts()
        else:
            del self.fields["host"]

    def clean_url(self) -> str:
        try:
            return check_webhook_url(self.cleaned_data["url"])
        except ValidationError as exc:
            raise ValidationError(exc.messages) from None


class MuteForm(forms.Form):
    prefix = "mute"
    hosts = forms.ModelMultipleChoiceField(
        queryset=Host.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        label="Tell me nothing about",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["hosts"].queryset = _hosts()
