"""The history page's filter form: parses and validates the query string."""

from __future__ import annotations

from django import forms

from audit.selectors import HistoryFilters


class HistoryFilterForm(forms.Form):
    host = forms.CharField(required=False, max_length=255)
    profile = forms.CharField(required=False, max_length=255)
    user = forms.CharField(required=False, max_length=150)
    kind = forms.CharField(
        required=False, max_length=64, help_text="A kind or a family, e.g. deploy"
    )
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    rollout = forms.IntegerField(required=False, min_value=1, widget=forms.HiddenInput)

    def clean(self) -> dict:
        data = super().clean()
        since, until = data.get("since"), data.get("until")
        if since and until and since > until:
            raise forms.ValidationError("'since' is after 'until'.")
        return data

    def filters(self) -> HistoryFilters:
        """The validated filters; call after is_valid()."""
        data = self.cleaned_data
        return HistoryFilters(
            host=data.get("host", "").strip(),
            profile=data.get("profile", "").strip(),
            user=data.get("user", "").strip(),
            kind=data.get("kind", "").strip(),
            since=data.get("since"),
            until=data.get("until"),
            rollout=data.get("rollout"),
        )
