"""The benchmark settings form of a profile (its BenchPolicy), outside Django admin."""

from __future__ import annotations

from typing import Any

from django import forms

from perf.models import BenchPolicy
from servebench.prompts import BUILTIN_SETS

MAX_LEVELS = 8
MAX_CONCURRENCY = 4096
MAX_BUDGET_S = 7200


class BenchPolicyForm(forms.ModelForm):
    """Every field of the policy, each with its bounds and what it does."""

    concurrency = forms.CharField(
        label="Concurrency levels",
        help_text="Streams measured, e.g. 1, 8, 32 (at most 8 levels).",
    )
    prompts = forms.ChoiceField(label="Prompt set", choices=[(name, name) for name in BUILTIN_SETS])
    endpoint = forms.ChoiceField(
        choices=[("completions", "/v1/completions"), ("chat", "/v1/chat/completions")]
    )

    class Meta:
        model = BenchPolicy
        fields = (
            "enabled",
            "threshold_pct",
            "repeats",
            "noisy_budget_s",
            "rollback_on_regression",
            "client_on_host",
            "endpoint",
            "prompts",
            "concurrency",
            "num_requests",
            "max_tokens",
            "seed",
        )
        labels = {
            "enabled": "Benchmark after each deploy",
            "threshold_pct": "Regression threshold (%)",
            "repeats": "Repeats of every level",
            "noisy_budget_s": "More repeats while the verdict is not sure, at most (s)",
            "rollback_on_regression": "Roll back when the benchmark regresses",
            "client_on_host": "Run the benchmark client on the host (as the unit's user)",
            "num_requests": "Requests per level",
            "max_tokens": "Output tokens per request",
            "seed": "Prompt order seed",
        }
        help_texts = {
            "threshold_pct": "A change beyond this (and beyond the repeats' spread) regresses.",
            "noisy_budget_s": "0: never measure more. Shown to the approver with the request.",
            "client_on_host": "Off: measured from the worker (through an SSH port forward for "
            "a server bound to loopback), which adds to TTFT.",
            "prompts": "The first measurement's settings; later runs reuse the baseline's.",
        }

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance is not None and not self.is_bound:
            self.initial["concurrency"] = ", ".join(
                str(c) for c in (self.instance.concurrency or [1])
            )

    def clean_concurrency(self) -> list[int]:
        text = self.cleaned_data["concurrency"]
        try:
            levels = [int(part) for part in text.replace(" ", "").split(",") if part]
        except ValueError:
            raise forms.ValidationError(
                f"Whole numbers separated by commas, not {text!r}."
            ) from None
        if not levels or len(levels) > MAX_LEVELS:
            raise forms.ValidationError(f"Give 1 to {MAX_LEVELS} levels.")
        if min(levels) < 1 or max(levels) > MAX_CONCURRENCY:
            raise forms.ValidationError(f"Each level is between 1 and {MAX_CONCURRENCY} streams.")
        return list(dict.fromkeys(levels))

    def _bounded(self, name: str, low: float, high: float) -> Any:
        value = self.cleaned_data[name]
        if value is None or not low <= value <= high:
            raise forms.ValidationError(f"Between {low:g} and {high:g}.")
        return value

    def clean_threshold_pct(self) -> float:
        return float(self._bounded("threshold_pct", 0.1, 100))

    def clean_repeats(self) -> int:
        return int(self._bounded("repeats", 1, 20))

    def clean_noisy_budget_s(self) -> int:
        return int(self._bounded("noisy_budget_s", 0, MAX_BUDGET_S))

    def clean_num_requests(self) -> int:
        return int(self._bounded("num_requests", 1, 10_000))

    def clean_max_tokens(self) -> int:
        return int(self._bounded("max_tokens", 1, 32_768))
