"""Forms of the fleet pages: input shape only; the rules live in `fleet.services`."""

from __future__ import annotations

from typing import Any

from django import forms

from deploys.forms import VersionChoiceField
from deploys.ids import row_id
from deploys.models import Host
from deploys.selectors import deployable_hosts, deployable_versions, host_list
from fleet.models import HostGroup, Rollout
from units.models import ProfileVersion


class HostsField(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Host) -> str:
        return f"{obj.name} (vLLM {obj.vllm_version or '?'})"

    def _check_values(self, value: Any) -> Any:
        """An id that cannot name a row is no such choice, before the database sees it
        (`deploys.ids`: SQLite refuses integers past 2**63 - 1 in an IN list)."""
        for pk in value:
            if row_id(str(pk)) is None:
                raise forms.ValidationError(
                    self.error_messages["invalid_choice"],
                    code="invalid_choice",
                    params={"value": str(pk)[:40]},
                )
        return super()._check_values(value)


class HostGroupForm(forms.Form):
    name = forms.SlugField(max_length=100, help_text="Short slug, e.g. serving-eu")
    description = forms.CharField(max_length=200, required=False)
    hosts = HostsField(
        queryset=Host.objects.none(), required=False, widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["hosts"].queryset = host_list()


class RolloutForm(forms.Form):
    profile_version = VersionChoiceField(
        queryset=ProfileVersion.objects.none(),
        label="Profile version",
        help_text="The latest version of each active profile",
    )
    group = forms.ModelChoiceField(
        queryset=HostGroup.objects.none(),
        required=False,
        label="Host group",
        help_text="Its hosts by name; or choose hosts below (in the order shown)",
    )
    hosts = HostsField(
        queryset=Host.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Used when no group is chosen; the first hosts are the canary",
    )
    unit_name = forms.CharField(required=False, max_length=247, label="Unit name (optional)")
    canary = forms.IntegerField(min_value=1, initial=1, label="Canary hosts")
    batch_size = forms.IntegerField(min_value=1, initial=2, label="Batch size")
    pause_s = forms.IntegerField(
        min_value=0, max_value=7 * 24 * 3600, initial=0, label="Pause between batches (s)"
    )
    budget_kind = forms.ChoiceField(choices=Rollout.Budget.choices, label="Failure budget in")
    budget_value = forms.IntegerField(
        min_value=0,
        initial=0,
        label="Failure budget",
        help_text="Failures after the canary "
        "that the rollout goes on with; one more halts it. A canary failure always halts.",
    )
    acknowledge_warnings = forms.BooleanField(
        required=False, label="I have read the lint warnings and accept them"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["profile_version"].queryset = deployable_versions()
        self.fields["group"].queryset = HostGroup.objects.order_by("name")
        self.fields["hosts"].queryset = deployable_hosts()

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if not data.get("group") and not data.get("hosts"):
            self.add_error("hosts", "Choose a host group or at least one host.")
        return data


class DecisionForm(forms.Form):
    expected_texts_sha256 = forms.CharField(widget=forms.HiddenInput, max_length=64)
    comment = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


__all__ = ["DecisionForm", "HostGroupForm", "RolloutForm"]
