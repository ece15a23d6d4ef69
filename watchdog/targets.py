"""What to watch on a host: every unit whose last push left a file there (a removal ends
the watch), with the text specadmin pushed — the approved one (`deploys.models.PushedUnit`,
docs/architecture.md "What runs where") — where its server answers, and the acceptance
rate its benchmark recorded (`perf`)."""

from __future__ import annotations

import functools
import re

from deploys.models import Host, PushedUnit
from hostops.service import vllm_service
from linting.options import LintOptions
from perf.models import Baseline, BenchRun
from units.linting import lint_rendered
from units.models import ProfileVersion
from units.rendering import environment_items
from watchdog.reader import Target

# vLLM's option, as rendered or as written by hand (its parser takes `_` for `-`).
SPECULATIVE = re.compile(r"--speculative[-_]config")


@functools.lru_cache(maxsize=512)
def _server(text: str, unit: str, environment: tuple[tuple[str, str], ...]) -> tuple[str, str, str]:
    """(base URL, API key, served model name) of the vLLM server the unit text runs;
    ("", "", "") when none. Cached by text: the watchdog asks for every host on every
    period."""
    report = lint_rendered(text, f"{unit}.service", f"{unit}.service", LintOptions())
    commands = report.files[0].commands if report.files else []
    try:
        service = vllm_service(commands, dict(environment))
    except ValueError:
        return "", "", ""
    return service.base_url, service.api_key, service.served_model_name


def _expected_acceptance(host: Host, version: ProfileVersion | None) -> float | None:
    if version is None:
        return None
    run = (
        BenchRun.objects.filter(host=host, profile_version=version, acceptance_rate__isnull=False)
        .order_by("-created_at", "-pk")
        .values_list("acceptance_rate", flat=True)
        .first()
    )
    if run is not None:
        return float(run)
    baseline = (
        Baseline.objects.filter(host=host, profile=version.profile)
        .values_list("run__acceptance_rate", flat=True)
        .first()
    )
    return None if baseline is None else float(baseline)


def _approved_drop_ins(push: PushedUnit) -> tuple[tuple[str, str], ...]:
    """The drop-ins systemd loaded for the unit when its deploy was requested (they needed
    an admin's adoption for the deploy to be written: deploys.unit_policy)."""
    loaded = push.request.host_loaded_unit if push.request else None
    files = loaded.get("files") if isinstance(loaded, dict) else None
    return tuple(
        (str(f["path"]), str(f["sha256"]))
        for f in files or []
        if isinstance(f, dict) and f.get("kind") == "drop-in" and f.get("path") and f.get("sha256")
    )


def watched_targets(host: Host) -> list[Target]:
    latest: dict[str, PushedUnit] = {}
    pushes = (
        PushedUnit.objects.filter(host=host)
        .select_related("request__profile_version__profile")
        .order_by("-pushed_at", "-pk")
    )
    for push in pushes:
        latest.setdefault(push.unit_name, push)
    targets = []
    for name, push in sorted(latest.items()):
        if not push.text:  # specadmin removed it
            continue
        version = push.request.profile_version if push.request else None
        env: tuple[tuple[str, str], ...] = ()
        if version is not None:
            try:
                env = tuple(environment_items(version.data))
            except (KeyError, TypeError):  # a version saved before these fields existed
                env = ()
        base_url, api_key, model = _server(push.text, name, env)
        targets.append(
            Target(
                unit=name,
                approved_text=push.text,
                version=f"{version.profile.name} v{version.number}" if version else "",
                base_url=base_url,
                api_key=api_key,
                model=model,
                # Only a speculative unit has an acceptance rate to compare (two queries).
                expected_acceptance=_expected_acceptance(host, version)
                if SPECULATIVE.search(push.text)
                else None,
                approved_drop_ins=_approved_drop_ins(push),
            )
        )
    return targets


__all__ = ["watched_targets"]
