"""Fixtures for the perf tests: the deploy tests' people, profile, host and requests, and
the vLLM double's API in its own process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from deploys.jobs.benchmark import BenchmarkJob
from deploys.jobs.context import JobContext
from deploys.jobs.recorder import Recorder
from deploys.models import DeployRequest
from hostops.service import VllmService
from perf.models import BenchPolicy
from tests.bench.conftest import vllm_double  # noqa: F401 (fixture)
from tests.deploys.conftest import (  # noqa: F401 (fixtures)
    host,
    make_request,
    on_host,
    people,
    profile,
    version,
)
from units.models import ServiceProfile


def service_at(url: str) -> VllmService:
    address, port = url.removeprefix("http://").rsplit(":", 1)
    return VllmService(
        argv=("vllm", "serve", "m"),
        style="serve",
        args_start=2,
        model="m",
        served_model_name="m",
        address=address,
        port=int(port),
    )


@pytest.fixture
def small_policy(profile: ServiceProfile) -> BenchPolicy:  # noqa: F811 (fixture)
    """Quick measurements: 4 requests × 32 tokens at concurrency 1, 2 repeats, and no more
    repeats to make a verdict sure (tests/perf/test_more_repeats.py measures those)."""
    return BenchPolicy.objects.create(
        profile=profile,
        concurrency=[1],
        num_requests=4,
        max_tokens=32,
        repeats=2,
        prompts="chat",
        noisy_budget_s=0,
    )


@pytest.fixture
def deploy_ctx(
    make_request: Callable[..., DeployRequest],  # noqa: F811 (fixture)
) -> Callable[[str], BenchmarkJob]:
    """`deploy_ctx(url)`: what the benchmark step is given, for a fresh request whose
    service answers at url."""

    def make(url: str, **kwargs: Any) -> BenchmarkJob:
        request = make_request()
        # the host lives on this machine: the worker reaches its services on loopback (the
        # deploy tests' host has a private address, which nothing here may connect to)
        # (the worker runs on it: no client is sent to the host)
        request.host.address = "127.0.0.1"
        request.host.transport = "local"
        request.host.save(update_fields=["address", "transport"])
        ctx = JobContext.open(request, _no_connection, **kwargs)
        return BenchmarkJob(ctx, Recorder(), service_at(url))

    return make


def _no_connection(_host: Any) -> Any:
    raise AssertionError("the benchmark step must not need a host connection here")
