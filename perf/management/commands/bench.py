"""`manage.py bench URL` or `manage.py bench --profile P --host H`: measure a vLLM server.

With a profile and a host the result is stored for that profile (and its deployed version)
on that host, measured with the settings of their baseline when there is one, and compared
with it (the regression gate, the profile's threshold). Without them it only prints.
`--vllm-bench` runs `vllm bench serve` on the host itself over SSH (where vLLM is
installed) and imports its saved JSON result instead (perf.vllm_bench). A deployed server
bound to loopback on an SSH host is measured through an SSH port forward (perf.reach).
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from deploys.connect import transport_for
from deploys.models import Host
from hostops.channel import Transport
from perf.reach import Endpoint, ServiceUnreachable, deployed_service, measured_endpoint
from perf.selectors import baseline_for, last_deploy, policy_for
from perf.services import compare_with_baseline, record_run
from perf.step import run_settings
from perf.vllm_bench import VllmBenchError, run_vllm_bench
from servebench.cli import add_run_arguments, settings_from_args
from servebench.gate import GateResult
from servebench.report import ProgressBar, format_gate, format_table
from servebench.runner import BenchError, RunSettings, run_sync
from servebench.schema import BenchResult
from units.models import ServiceProfile


class Command(BaseCommand):
    help = __doc__.split("\n\n")[0]

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("url", nargs="?", help="server base URL (optional with --host)")
        add_run_arguments(parser)
        parser.add_argument("--profile", help="store the result for this profile (name)")
        parser.add_argument("--host", dest="host_name", help="… on this host (name)")
        parser.add_argument(
            "--vllm-bench",
            action="store_true",
            help="run `vllm bench serve` on the host over SSH and import its result",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        ns = argparse.Namespace(**options)
        profile, host = self._target(ns)
        if ns.url is None and host is None:
            raise CommandError("give a URL, or --profile and --host of a deployed profile")
        if ns.vllm_bench and host is None:
            raise CommandError("--vllm-bench runs on a host: give --profile and --host")
        baseline = baseline_for(profile, host) if profile else None
        with ExitStack() as stack:
            endpoint = self._endpoint(stack, ns, profile, host)
            result = self._measure(ns, endpoint.url, profile, host, baseline)
        data: dict[str, Any] = result.to_dict()
        verdict = self._store(result, data, profile, host, endpoint.label)
        if ns.json:
            self.stdout.write(json.dumps(data, indent=1))
            return
        self.stdout.write(format_table(result))
        if "bench_run" in data:
            self.stdout.write(f"stored as run #{data['bench_run']} of {profile} on {host}")
        if verdict is not None:
            self.stdout.write(format_gate(verdict))
        elif profile is not None and baseline is None:
            self.stdout.write("no baseline yet: an admin can accept this run as the baseline")

    def _endpoint(
        self, stack: ExitStack, ns: argparse.Namespace, profile: Any, host: Host | None
    ) -> Endpoint:
        """The URL given; else where the deployed profile answers: on the host itself for
        --vllm-bench, else as the worker reaches it (an SSH port forward for a server bound
        to loopback, open in `stack` until the measurement ends)."""
        if ns.url is not None:
            return Endpoint(url=ns.url, label=ns.url)
        assert host is not None  # handle() refuses a run with neither a URL nor a host
        try:
            service = deployed_service(profile, host)
            if ns.vllm_bench:
                return Endpoint(url=service.base_url, label=service.base_url)

            def connect() -> Transport:  # closed with the stack, after the measurement
                return stack.enter_context(transport_for(host))

            endpoint = stack.enter_context(measured_endpoint(service, host, connect))
        except ServiceUnreachable as exc:
            raise CommandError(str(exc)) from None
        if endpoint.forwarded:
            self.stderr.write(f"measuring {endpoint.label} through an SSH port forward")
        return endpoint

    def _measure(
        self, ns: argparse.Namespace, url: str, profile: Any, host: Host | None, baseline: Any
    ) -> BenchResult:
        try:
            settings = self._settings(ns, url, profile, baseline)
            if ns.vllm_bench:
                return run_vllm_bench(host, settings)
            progress = None if ns.quiet else ProgressBar(sys.stderr)
            return run_sync(settings, progress)
        except (BenchError, VllmBenchError, ValueError) as exc:
            raise CommandError(str(exc)) from None

    def _store(
        self, result: BenchResult, data: dict[str, Any], profile: Any, host: Any, label: str
    ) -> GateResult | None:
        """With a profile and a host: store the run (`data` gets its id) and gate it."""
        if profile is None or host is None:
            return None
        run = record_run(
            result=result,
            profile=profile,
            host=host,
            profile_version=getattr(last_deploy(profile, host), "profile_version", None),
            url=label,
        )
        data["bench_run"] = run.pk
        if result.incomplete:
            return None
        verdict = compare_with_baseline(run, policy_for(profile).threshold_pct)
        if verdict is not None:
            data["gate"] = verdict.to_dict()
        return verdict

    def _target(self, ns: argparse.Namespace) -> tuple[ServiceProfile | None, Host | None]:
        if bool(ns.profile) != bool(ns.host_name):
            raise CommandError("--profile and --host go together")
        if not ns.profile:
            return None, None
        profile = ServiceProfile.objects.filter(name=ns.profile).first()
        if profile is None:
            raise CommandError(f"no profile named {ns.profile!r}")
        host = Host.objects.filter(name=ns.host_name).first()
        if host is None:
            raise CommandError(f"no host named {ns.host_name!r}")
        return profile, host

    def _settings(
        self, ns: argparse.Namespace, url: str, profile: Any, baseline: Any
    ) -> RunSettings:
        """The baseline's settings when comparing with one, else the options given."""
        if baseline is None:
            return settings_from_args(ns, url)
        self.stderr.write(f"using the settings of baseline run #{baseline.run_id}")
        settings = run_settings(policy_for(profile), baseline.run.settings, url, ns.api_key or "")
        settings.repeats = ns.repeats
        return settings


__all__ = ["Command"]
