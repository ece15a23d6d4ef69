"""Hosts with a pushed unit and a fake host to read, for the watchdog's database tests."""

from __future__ import annotations

from deploys.models import Host, PushedUnit
from hostops.channel.push import sha256_hex
from tests.doubles.watch_host import FakeHost, FakeServer, FakeUnit

UNIT = "vllm-a"
PORT = 8001
TEXT = (
    "[Unit]\nDescription=vLLM m\n\n[Service]\nUser=vllm\n"
    f"ExecStart=/usr/bin/vllm serve m --port {PORT}\n\n[Install]\nWantedBy=multi-user.target\n"
)


def make_host(name: str = "gpu1", *, text: str = TEXT, unit: str = UNIT) -> Host:
    host = Host.objects.create(
        name=name, address="127.0.0.1", transport=Host.Transport.LOCAL, gpu_count=8
    )
    PushedUnit.objects.create(
        host=host, unit_name=unit, text=text, sha256=sha256_hex(text.encode())
    )
    return host


def healthy_fake(text: str = TEXT) -> FakeHost:
    fake = FakeHost(units={UNIT: FakeUnit()}, servers={PORT: FakeServer(running=1, generated=10)})
    fake.write_unit(UNIT, text)
    fake.free_gpus()
    return fake
