"""What a job may do on the host besides writing the unit, as part of what is approved.

The unit text is not all an approver approves: the profile's deploy-job settings decide
whether the job may kill other users' processes on the service's GPUs, whether it rolls
back, and how long each wait lasts; the benchmark policy (the `perf` app) decides whether a
regression rolls back. These settings are stored on the request when it is made
(`DeployRequest.job_settings`, with their sha256), shown on the request page beside the
unit and diffed against the settings of what runs on the host now; the approval pins their
hash (`approved_settings_sha256`), and the approval rules (`deploys.approvals`) void a
request whose settings, recomputed, differ from the approved ones. The job reads these
stored settings, not the profile's current ones.

The benchmark policy lives in `perf`, which depends on `deploys`: it registers the function
that reads a profile's policy here when Django loads it (`perf.apps.PerfConfig.ready`).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Callable
from typing import Any

from deploys.jobs.policy import PipelinePolicy
from deploys.models import PushedUnit
from units.models import ProfileVersion

BenchmarkSettings = Callable[[Any], dict[str, Any]]
_benchmark_settings: BenchmarkSettings | None = None

# (section, key, label), in the order the page shows them: what may touch other people's
# work first.
LABELS: tuple[tuple[str, str, str], ...] = (
    ("pipeline", "kill_foreign", "Kill other users' processes on the service's GPUs"),
    ("pipeline", "rollback", "Roll back to the previous unit when the new one fails"),
    ("benchmark", "enabled", "Benchmark after the deploy"),
    ("benchmark", "rollback_on_regression", "Roll back when the benchmark regresses"),
    ("benchmark", "threshold_pct", "Benchmark regression threshold (%)"),
    ("pipeline", "gpu_threshold_mib", "A GPU is free at or below (MiB)"),
    ("pipeline", "stop_timeout_s", "Stop waits at most (s)"),
    ("pipeline", "gpu_clean_s", "GPU clean-up after the stop, kills included (s)"),
    ("pipeline", "kill_grace_s", "SIGTERM → SIGKILL grace for leftovers (s)"),
    ("pipeline", "journal_check_s", "Journal watched after the start (s)"),
    ("pipeline", "ready_timeout_s", "Readiness wait (s)"),
    ("benchmark", "repeats", "Benchmark repeats"),
    ("benchmark", "noisy_budget_s", "Benchmark: more repeats while not sure, at most (s)"),
    ("benchmark", "client_on_host", "Benchmark client runs on the host (else the worker)"),
    ("benchmark", "endpoint", "Benchmark endpoint"),
    ("benchmark", "prompts", "Benchmark prompts"),
    ("benchmark", "concurrency", "Benchmark concurrency"),
    ("benchmark", "num_requests", "Benchmark requests per level"),
    ("benchmark", "max_tokens", "Benchmark max tokens"),
    ("benchmark", "seed", "Benchmark seed"),
)


def register_benchmark_settings(read: BenchmarkSettings | None) -> None:
    """Install the function that returns a profile's benchmark policy as JSON."""
    global _benchmark_settings
    _benchmark_settings = read


def job_settings(*, profile_version: ProfileVersion) -> dict[str, Any]:
    """The settings a job for `profile_version` runs with, as plain JSON."""
    pipeline = PipelinePolicy.from_profile_data(profile_version.data).as_json()
    benchmark = {} if _benchmark_settings is None else _benchmark_settings(profile_version.profile)
    return {"pipeline": pipeline, "benchmark": benchmark}


def settings_sha256(settings: dict[str, Any]) -> str:
    """The hash an approval pins: of the canonical JSON (sorted keys, no spaces)."""
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return ", ".join(_shown(v) for v in value) or "default"
    return str(value)


def _trial_lines(plan: dict[str, Any]) -> list[tuple[str, str]]:
    """A trial's plan (`deploys.trials.trial_plan`) as lines a person reads: production,
    each candidate in order with what becomes of its file, the promote threshold, the end.
    The sha256 is shortened here; the trial's section on the page shows each in full."""
    production = plan.get("production") or {}
    rows = [("Trial: production", f"{production.get('unit', '?')} (sha256 {_short(production)})")]
    for c in plan.get("candidates") or []:
        kept = "kept (stopped) at the end" if c.get("keep") else "removed at the end"
        rows.append(
            (
                f"Trial candidate {c.get('position')}",
                f"{c.get('unit')} ({c.get('profile')} v{c.get('version')}, sha256 "
                f"{_short(c)}), {kept}",
            )
        )
    threshold = plan.get("promote_threshold_pct")
    rows.append(("Trial: promote at (%)", "off" if threshold is None else _shown(threshold)))
    rows.append(("Trial: at the end", str(plan.get("end") or "")))
    return rows


def _short(entry: dict[str, Any]) -> str:
    return f"{str(entry.get('sha256') or '')[:12]}…"


def settings_lines(settings: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(label, value) per setting, known ones in LABELS' order, then a trial's plan, then
    any others."""
    if not settings:
        return []
    rows = []
    known = set()
    for section, key, label in LABELS:
        values = settings.get(section) or {}
        known.add((section, key))
        if key in values:
            rows.append((label, _shown(values[key])))
    if isinstance(settings.get("trial"), dict):
        rows += _trial_lines(settings["trial"])
    for section, values in sorted(settings.items()):
        if section == "trial":
            continue
        for key, value in sorted((values or {}).items()):
            if (section, key) not in known:
                rows.append((f"{section} {key}", _shown(value)))
    return rows


def settings_table(
    *, now: dict[str, Any] | None, requested: dict[str, Any]
) -> list[dict[str, Any]]:
    """Rows for the request page: label, the value now on the host, the requested one."""
    before = dict(settings_lines(now))
    return [
        {
            "label": label,
            "now": before.get(label, "—" if now is None else "(not set)"),
            "requested": value,
            "changed": now is not None and before.get(label) != value,
        }
        for label, value in settings_lines(requested)
    ]


def settings_diff(*, now: dict[str, Any] | None, requested: dict[str, Any], now_label: str) -> str:
    """A unified diff of the settings, one "label: value" line each ("" when equal)."""
    old = [f"{label}: {value}\n" for label, value in settings_lines(now)]
    new = [f"{label}: {value}\n" for label, value in settings_lines(requested)]
    return "".join(
        difflib.unified_diff(
            old,
            new,
            fromfile=now_label if now is not None else f"{now_label} (none)",
            tofile="job settings of this request",
            n=len(old) + len(new),
        )
    )


def running_settings(
    *, host_id: int, unit_name: str, exclude_request: int | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The job settings of what runs on the host under `unit_name` now (the last push
    there, by a request other than `exclude_request`) and a label for the diff; None when
    specadmin never pushed it or the push predates stored settings."""
    push = (
        PushedUnit.objects.filter(host_id=host_id, unit_name=unit_name, request__isnull=False)
        .exclude(request_id=exclude_request)
        .select_related("request")
        .order_by("-pushed_at", "-pk")
        .first()
    )
    if push is None or push.request is None or not push.request.job_settings:
        return None, "job settings of what runs now"
    return push.request.job_settings, f"job settings now (request #{push.request_id})"


def page_context(
    *, requested: dict[str, Any], host_id: int, unit_name: str, exclude_request: int | None
) -> dict[str, Any]:
    """What the request pages show of the job settings: the table and the diff."""
    now, label = running_settings(
        host_id=host_id, unit_name=unit_name, exclude_request=exclude_request
    )
    return {
        "settings_rows": settings_table(now=now, requested=requested),
        "settings_now_known": now is not None,
        "settings_diff": settings_diff(now=now, requested=requested, now_label=label),
    }


def changed_labels(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """ "label: old → new" for each setting that differs."""
    before = dict(settings_lines(old))
    after = dict(settings_lines(new))
    return [
        f"{label}: {before.get(label, '(not set)')} → {after.get(label, '(not set)')}"
        for label in dict.fromkeys([*before, *after])
        if before.get(label) != after.get(label)
    ]


__all__ = [
    "changed_labels",
    "job_settings",
    "page_context",
    "register_benchmark_settings",
    "running_settings",
    "settings_diff",
    "settings_lines",
    "settings_sha256",
    "settings_table",
]
