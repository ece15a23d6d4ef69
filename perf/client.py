"""Where the benchmark client runs, and what it measures (docs/benchmarks.md, "Where the
client runs"): on an SSH host, on the host itself as the unit's user (`perf.onhost`);
where that cannot be done, or the policy says not to, from the worker (`perf.reach`:
directly, or through an SSH port forward for a server bound to loopback), with the
reason recorded. A local host is measured from the worker, which runs on it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hostops.channel import Transport
from hostops.service import VllmService
from perf.bench_thread import run_beside_the_job
from perf.onhost import NotOnHost, client_on_host
from perf.reach import measured_endpoint
from servebench.runner import Progress, RunSettings
from servebench.schema import BenchResult

Measure = Callable[[RunSettings, Callable[[Progress], None], Callable[[], bool]], BenchResult]


@dataclass(frozen=True)
class Client:
    """How this job measures: `measure(settings, progress, cancel_requested)` (the
    settings' URL is replaced by `url`), `label` stored with the run, `where` for the step
    log, and `fallback`: why the client is not on the host ("" when it is, or the host is
    local)."""

    measure: Measure
    url: str
    label: str
    where: str
    on_host: bool = False
    fallback: str = ""
    forwarded: bool = False


def _worker(url: str) -> Measure:
    def measure(
        settings: RunSettings, progress: Callable[[Progress], None], cancel: Callable[[], bool]
    ) -> BenchResult:
        return run_beside_the_job(replace(settings, url=url), progress, cancel)

    return measure


@contextmanager
def benchmark_client(
    service: VllmService,
    host: Any,
    transport: Callable[[], Transport],
    unit_text: str,
    *,
    on_host: bool = True,
) -> Iterator[Client]:
    """The client for the with-block. Raises perf.reach.ServiceUnreachable when the
    worker cannot reach the server either."""
    fallback = ""
    if host.transport != "local" and on_host:
        try:
            with client_on_host(transport(), service, unit_text) as remote:
                yield Client(
                    measure=lambda s, p, c: remote.measure(replace(s, url=service.base_url), p, c),
                    url=service.base_url,
                    label=f"{service.base_url} on {host.name} (client on the host as "
                    f"{remote.user})",
                    where=(
                        f"{service.base_url} with the client on {host.name} as {remote.user} "
                        f"({remote.python}: {remote.versions})"
                    ),
                    on_host=True,
                )
            return
        except NotOnHost as exc:
            fallback = f"the client could not run on {host.name}: {exc}"
    with measured_endpoint(service, host, transport) as endpoint:
        where = endpoint.label
        if endpoint.forwarded:
            where = where.removesuffix(" (SSH port forward)")
            where += f" through an SSH port forward ({endpoint.url} in the worker)"
        elif host.transport != "local":
            where += " from the worker"
        if host.transport != "local" and not on_host:
            where += " (the benchmark policy measures from the worker)"
        label = endpoint.label + (f" (client in the worker: {fallback})" if fallback else "")
        yield Client(
            measure=_worker(endpoint.url),
            url=endpoint.url,
            label=label[:500],
            where=where,
            fallback=fallback,
            forwarded=endpoint.forwarded,
        )


__all__ = ["Client", "benchmark_client"]
