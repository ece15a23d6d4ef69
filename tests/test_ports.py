"""Test ports that cannot be taken between the pick and the use (tests/ports.py)."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tests.ports import LOOPBACK, refusing_port, service_port


def test_a_refusing_port_refuses_connections_and_no_one_else_can_listen_there() -> None:
    with refusing_port() as port:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((LOOPBACK, port), timeout=5)
        with socket.socket() as other, pytest.raises(OSError, match="Address already in use"):
            other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            other.bind((LOOPBACK, port))


def test_a_service_port_is_free_and_below_the_kernels_ephemeral_range() -> None:
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    port = service_port()
    assert port < low
    with socket.create_server((LOOPBACK, port)):
        pass
