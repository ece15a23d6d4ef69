"""The trial form: production on a host, the candidate versions in order, what happens at
the end (docs/trials.md). The service (`deploys.services.trial_requests`) checks it all
again; the form gives each refusal its field."""

from __future__ import annotations

from typing import Any

from django import forms

from deploys.forms import HostChoiceField
from deploys.models import Host
from deploys.running import units_on_host
from deploys.selectors import deployable_hosts
from deploys.services.trial_requests import MAX_CANDIDATES
from units.models import ProfileVersion


class CandidateChoiceField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: ProfileVersion) -> str:
        return f"{obj.profile.name} v{obj.number}"


def candidate_versions() -> Any:
    """Every version of every active profile (a trial may try an older one too)."""
    return (
        ProfileVersion.objects.filter(profile__archived=False)
        .select_related("profile")
        .order_by("profile__name", "-number")
    )


def _known_units(host: Host | None) -> list[Any]:
    if host is None:
        return []
    return [u for u in units_on_host(host=host) if u.seen.present and u.text.versions]


def production_choices(host: Host | None) -> list[tuple[str, str]]:
    """The units on `host` whose text is a version specadmin knows (a trial must be able
    to start that text again), by unit name."""
    return [(u.unit_name, f"{u.unit_name}.service — {u.text.name}") for u in _known_units(host)]


def production_profiles(host: Host | None) -> list[Any]:
    """The profiles of what may be production on `host`: a trial measures every candidate
    with production's benchmark settings, which are set on its profile."""
    found = {v.profile.pk: v.profile for u in _known_units(host) for v in u.text.versions}
    return list(found.values())


RUN_AS_OWN = "own"
RUN_AS_PRODUCTION = "production"
RUN_AS_CHOICES = [
    (RUN_AS_OWN, "Each as its own unit (its profile's name), beside production's file"),
    (RUN_AS_PRODUCTION, "In production's own unit file, under production's name"),
]


class TrialForm(forms.Form):
    host = HostChoiceField(queryset=Host.objects.none(), help_text="Hosts with a pinned key")
    production_unit = forms.ChoiceField(
        label="Production (what runs there now)",
        help_text="Stopped while each candidate runs in its place; started again at the end.",
        choices=(),
    )
    candidates = CandidateChoiceField(
        queryset=ProfileVersion.objects.none(),
        label="Candidates",
        help_text=f"Tried one by one, in this list's order; at most {MAX_CANDIDATES}.",
        widget=forms.CheckboxSelectMultiple,
    )
    run_as = forms.ChoiceField(
        label="The candidates run",
        choices=RUN_AS_CHOICES,
        initial=RUN_AS_OWN,
        required=False,
        widget=forms.RadioSelect,
        help_text="In production's file, production's approved text is written back after "
        "each candidate and read back (sha256) before production starts again "
        "(docs/trials.md).",
    )
    keep = forms.BooleanField(
        required=False, label="Keep the candidates' unit files on the host (stopped)"
    )
    promote_threshold = forms.FloatField(
        required=False,
        min_value=0.1,
        max_value=100,
        label="Promote at (%) (optional)",
        help_text="If the best candidate beats production by at least this much on every "
        "gated metric, leave it running as production. Empty: production always comes back.",
    )
    acknowledge_warnings = forms.BooleanField(
        required=False, label="I have read the candidates' lint warnings and accept them"
    )

    def __init__(self, *args: Any, host: Host | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["host"].queryset = deployable_hosts()
        self.fields["candidates"].queryset = candidate_versions()
        choices = production_choices(host)
        self.fields["production_unit"].choices = choices
        self.no_production = host is not None and not choices
        self.production_profiles = production_profiles(host)

    def clean_run_as(self) -> str:
        return self.cleaned_data.get("run_as") or RUN_AS_OWN

    def candidate_unit_name(self) -> str:
        """The unit name every candidate runs as: production's, or '' (its profile's)."""
        if self.cleaned_data.get("run_as") == RUN_AS_PRODUCTION:
            return str(self.cleaned_data.get("production_unit") or "")
        return ""


__all__ = [
    "RUN_AS_OWN",
    "RUN_AS_PRODUCTION",
    "TrialForm",
    "candidate_versions",
    "production_choices",
    "production_profiles",
]
