"""The per-host watch settings form (watchdog.views.watch_settings): bounds said in words,
the same bounds the model's validators hold (watchdog.models)."""

from __future__ import annotations

from typing import Any

from django import forms

from watchdog.models import (
    MAX_HUNG_WINDOW_S,
    MAX_PERIOD_S,
    MIN_HUNG_WINDOW_S,
    MIN_PERIOD_S,
    HostWatch,
)

SETTINGS_FIELDS = ("enabled", "period_s", "hung_window_s", "canary")


def _seconds(low: int, high: int, what: str) -> dict[str, str]:
    return {
        "min_value": f"{what} must be at least {low} seconds.",
        "max_value": f"{what} must be at most {high} seconds.",
        "invalid": f"{what} is a whole number of seconds.",
    }


class WatchSettingsForm(forms.ModelForm):  # type: ignore[type-arg]
    period_s = forms.IntegerField(
        label="Check every (seconds)",
        min_value=MIN_PERIOD_S,
        max_value=MAX_PERIOD_S,
        error_messages={
            **_seconds(MIN_PERIOD_S, MAX_PERIOD_S, "The period"),
            "required": "Say how often the host is checked.",
        },
        help_text=f"{MIN_PERIOD_S}–{MAX_PERIOD_S} s; 30 by default.",
    )
    hung_window_s = forms.IntegerField(
        label="Hung-engine window (seconds)",
        required=False,
        min_value=MIN_HUNG_WINDOW_S,
        max_value=MAX_HUNG_WINDOW_S,
        error_messages=_seconds(MIN_HUNG_WINDOW_S, MAX_HUNG_WINDOW_S, "The hung-engine window"),
        help_text="Requests running and no token for this long is a hung engine; "
        "empty: the site's setting (WATCHDOG_HUNG_WINDOW_S, 60 s by default). "
        "Shorter than the period: a busy host is checked once per window.",
    )

    class Meta:
        model = HostWatch
        fields = SETTINGS_FIELDS
        labels = {"enabled": "Watch this host", "canary": "One-token canary request"}
        help_texts = {
            "enabled": "Off: the host is not checked (paused) until this is on again.",
            "canary": "Each check also asks each running vLLM server for one token "
            "(POST /v1/completions, max_tokens 1) with a deadline; /health answering but "
            "no token in time is a hung engine. Off by default: it adds a request per period.",
        }

    def values(self) -> dict[str, Any]:
        return {name: self.cleaned_data.get(name) for name in SETTINGS_FIELDS}
