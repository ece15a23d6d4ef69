"""Forms of the host and deploy pages: input shape only; the rules live in services."""

from __future__ import annotations

from typing import Any

from django import forms

from deploys.addresses import host_address_problem
from deploys.models import DeployRequest, Host
from deploys.selectors import deployable_hosts, deployable_versions, host_list
from deploys.services.hosts import KEY_MATERIAL_ERROR, clean_key_file, looks_like_key_material
from deploys.unit_policy import denied_unit_reason
from units.models import ProfileVersion
from units.names import validate_unit_name
from units.unicode_text import invisible_problem, validate_visible


class HostForm(forms.ModelForm):
    """Step 1 of adding a host (and, as hidden fields, part of step 2)."""

    class Meta:
        model = Host
        fields = ["name", "address", "ssh_port", "username", "transport", "auth", "key_file"]
        help_texts = {
            "name": "Short slug, e.g. gpu-a1",
            "key_file": "Absolute path of an unencrypted private key on the worker (never "
            "the key itself); leave empty with agent auth",
        }
        labels = {"ssh_port": "SSH port", "key_file": "Key file path"}

    def clean_address(self) -> str:
        address = self.cleaned_data["address"].strip()
        problem = host_address_problem(address)
        if problem:
            raise forms.ValidationError(problem)
        return address

    def clean_username(self) -> str:
        username = self.cleaned_data["username"].strip()
        problem = invisible_problem(username)
        if problem:
            raise forms.ValidationError(problem)
        return username

    def clean_key_file(self) -> str:
        key_file = self.cleaned_data["key_file"]
        if looks_like_key_material(key_file):
            # Refused here, before any page (the confirm step's hidden fields, this form
            # shown again with its errors) could carry the key back to the browser.
            self.data = self.data.copy()
            self.data["key_file"] = ""
            raise forms.ValidationError(KEY_MATERIAL_ERROR)
        return key_file

    def clean(self) -> dict[str, Any]:
        """The key file path is checked in step 1, before anyone compares a fingerprint."""
        data = super().clean()
        if data.get("transport") == Host.Transport.SSH and "key_file" not in self.errors:
            try:
                clean_key_file(data.get("auth", ""), data.get("key_file", ""))
            except forms.ValidationError as exc:
                self.add_error(None, exc)
        return data

    def service_kwargs(self) -> dict[str, Any]:
        return {f: self.cleaned_data[f] for f in self.Meta.fields}


class HostEditForm(HostForm):
    """How specadmin reaches a host; the name stays (history and units refer to it)."""

    class Meta(HostForm.Meta):
        fields = ["address", "ssh_port", "username", "transport", "auth", "key_file"]


class HostConfirmForm(forms.Form):
    """Step 2: the key shown in step 1 and the admin's confirmation."""

    host_key = forms.CharField(widget=forms.HiddenInput)
    fingerprint = forms.CharField(widget=forms.HiddenInput)
    confirm = forms.BooleanField(
        label="I compared this fingerprint with the host's own (out of band) and it matches"
    )


class UnitAdoptForm(forms.Form):
    """An admin lets specadmin replace a unit file it did not write."""

    unit_name = forms.CharField(max_length=247, help_text="Without .service")
    comment = forms.CharField(
        max_length=2000,
        validators=[validate_visible],
        label="Why specadmin may replace it",
        widget=forms.Textarea(attrs={"rows": 2}),
    )


class ProbeExecutablesForm(forms.Form):
    """The admin's list of vLLM executables the probe may run."""

    executables = forms.CharField(
        required=False,
        max_length=5000,
        label="vLLM executables the probe may run",
        help_text="One absolute path per line (e.g. /opt/vllm/bin/vllm). The probe runs "
        "`--version` only when no one but root can change the path (checked on the host).",
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )

    def paths(self) -> list[str]:
        return [line.strip() for line in self.cleaned_data["executables"].split("\n")]


class PinKeyForm(forms.Form):
    fingerprint = forms.CharField(widget=forms.HiddenInput)


class VersionChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: ProfileVersion) -> str:
        return f"{obj.profile.name} v{obj.number}"


class HostChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Host) -> str:
        return f"{obj.name} ({obj.address})" if obj.transport == Host.Transport.SSH else obj.name


class DeployRequestForm(forms.Form):
    profile_version = VersionChoiceField(
        queryset=ProfileVersion.objects.none(),
        label="Profile version",
        help_text="The latest version of each active profile",
    )
    host = HostChoiceField(queryset=Host.objects.none(), help_text="Hosts with a pinned key")
    unit_name = forms.CharField(
        required=False,
        max_length=247,
        label="Unit name (optional)",
        help_text="Without .service; default: the profile name. A new name leaves the old "
        "unit on the host as a fallback.",
    )
    acknowledge_warnings = forms.BooleanField(
        required=False, label="I have read the lint warnings and accept them"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["profile_version"].queryset = deployable_versions()
        hosts = self.fields["host"].queryset = deployable_hosts()
        only = list(hosts[:2])
        if len(only) == 1 and not self.is_bound and "host" not in self.initial:
            self.initial["host"] = only[0].pk  # nothing to choose
        self.no_host = not only

    def clean_unit_name(self) -> str:
        name = self.cleaned_data["unit_name"].strip()
        if name:
            validate_unit_name(name)  # before any path is built from it
            denied = denied_unit_reason(name)
            if denied:
                raise forms.ValidationError(denied)
        return name

    def clean(self) -> dict[str, Any]:
        """The default unit name (the profile's) meets the deny list too, before the page
        reads anything from the host."""
        data = super().clean()
        version = data.get("profile_version")
        if version is not None and not data.get("unit_name") and "unit_name" not in self.errors:
            denied = denied_unit_reason(version.profile.name)
            if denied:
                self.add_error("unit_name", denied)
        return data


class DecisionForm(forms.Form):
    comment = forms.CharField(
        required=False,
        max_length=2000,
        validators=[validate_visible],
        widget=forms.Textarea(attrs={"rows": 3}),
    )
    expected_sha256 = forms.CharField(required=False, widget=forms.HiddenInput)


class RequestFilterForm(forms.Form):
    status = forms.ChoiceField(
        required=False, choices=[("", "any status"), *DeployRequest.Status.choices]
    )
    host = forms.ModelChoiceField(
        required=False, queryset=Host.objects.none(), empty_label="any host"
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["host"].queryset = host_list(archived=None).only("id", "name")

    def selector_kwargs(self) -> dict[str, Any]:
        if not self.is_valid():
            return {}
        return {"status": self.cleaned_data["status"], "host": self.cleaned_data["host"]}
