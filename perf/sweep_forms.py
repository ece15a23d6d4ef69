"""The sweep form: which version, on which host (its vLLM release decides what is
accepted), the grid, and the clone's name. Parsing errors are form errors at their field;
what a point's settings do wrong is the plan's business (units.sweeps)."""

from __future__ import annotations

from typing import Any

from django import forms

from deploys.models import Host
from units.models import ProfileVersion, ServiceProfile
from units.names import validate_unit_name
from units.sweeps import Grid, SweepError, method_choices, parse_flags, parse_numbers


def _version_label(obj: ProfileVersion) -> str:
    return f"v{obj.number}: {obj.comment or '—'}"[:120]


class SweepForm(forms.Form):
    version = forms.ModelChoiceField(
        queryset=ProfileVersion.objects.none(),
        label="Start from version",
        help_text="Every point changes only the swept settings of this version.",
    )
    host = forms.ModelChoiceField(
        queryset=Host.objects.filter(archived=False).order_by("name"),
        label="Host",
        help_text="Its vLLM release (from the last probe) decides which points are accepted.",
    )
    methods = forms.MultipleChoiceField(
        label="Speculative methods",
        widget=forms.CheckboxSelectMultiple,
        help_text="eagle, eagle3 and draft_model need the draft model path below.",
    )
    num_speculative_tokens = forms.CharField(
        label="Speculative tokens (num_speculative_tokens)",
        required=False,
        help_text="Values to try, e.g. 3, 5, 8. Empty: the method's default.",
    )
    prompt_lookup_max = forms.CharField(
        label="Prompt lookup max (n-gram)", required=False, help_text="e.g. 2, 4"
    )
    prompt_lookup_min = forms.CharField(
        label="Prompt lookup min (n-gram)", required=False, help_text="e.g. 1, 2"
    )
    draft_model = forms.CharField(
        label="Draft model path (eagle, eagle3, draft_model)", required=False, max_length=500
    )
    flags = forms.CharField(
        label="Other flags",
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="One vLLM flag per line with the values to try: --max-num-seqs 32, 64",
    )
    clone_name = forms.CharField(
        label="Name of the profile that holds the candidates",
        max_length=247,
        required=False,
        help_text="A clone of the profile; each accepted point becomes one of its versions.",
    )

    def __init__(self, *args: Any, profile: ServiceProfile, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.profile = profile
        version_field = self.fields["version"]
        assert isinstance(version_field, forms.ModelChoiceField)
        version_field.queryset = ProfileVersion.objects.filter(profile=profile).order_by("-number")
        version_field.label_from_instance = _version_label  # type: ignore[method-assign]
        methods = self.fields["methods"]
        assert isinstance(methods, forms.MultipleChoiceField)
        methods.choices = method_choices()

    def _numbers(self, name: str) -> tuple[int, ...]:
        try:
            return parse_numbers(self.cleaned_data.get(name) or "", str(self.fields[name].label))
        except SweepError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_num_speculative_tokens(self) -> tuple[int, ...]:
        return self._numbers("num_speculative_tokens")

    def clean_prompt_lookup_max(self) -> tuple[int, ...]:
        return self._numbers("prompt_lookup_max")

    def clean_prompt_lookup_min(self) -> tuple[int, ...]:
        return self._numbers("prompt_lookup_min")

    def clean_flags(self) -> Any:
        try:
            return parse_flags(self.cleaned_data.get("flags") or "")
        except SweepError as exc:
            raise forms.ValidationError(str(exc)) from None

    def clean_clone_name(self) -> str:
        name = (self.cleaned_data.get("clone_name") or "").strip()
        if name:
            try:
                validate_unit_name(name)
            except forms.ValidationError as exc:
                raise forms.ValidationError(exc.messages) from None
        return name

    def grid(self) -> Grid:
        data = self.cleaned_data
        return Grid(
            methods=tuple(data["methods"]),
            num_speculative_tokens=data["num_speculative_tokens"],
            prompt_lookup_max=data["prompt_lookup_max"],
            prompt_lookup_min=data["prompt_lookup_min"],
            draft_model=(data.get("draft_model") or "").strip(),
            flags=data["flags"],
        )


__all__ = ["SweepForm"]
