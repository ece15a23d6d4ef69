"""Loopback ports for tests without the pick-then-bind race.

A port read from a socket bound to port 0 and closed again is only free at that moment: on a
busy machine any process (an outgoing connection's ephemeral port included) can take it
before the server the test starts binds it, and the server then fails with "Address already
in use". So a port is never chosen here for someone else to bind later: either the socket
stays bound while the port is in use (`refusing_port`), or the server binds port 0 itself
and the test reads the port it got (`listening_port`). A port that must be known before
its server starts is picked where the kernel hands out no ports by itself (`service_port`).
"""

from __future__ import annotations

import contextlib
import random
import re
import socket
import time
from collections.abc import Iterator

from tests.testhost.host import TestHost

LOOPBACK = "127.0.0.1"


@contextlib.contextmanager
def refusing_port() -> Iterator[int]:
    """A loopback port on which connections are refused while the block runs: bound here
    and never listening (Linux answers a SYN to it with a reset), so no other process can
    start listening there meanwhile."""
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        yield int(s.getsockname()[1])


# ss(8) `-Hltnp`: "LISTEN 0 5 127.0.0.1:40123 0.0.0.0:* users:(("python3",pid=42,fd=3))",
# one ("name",pid=N,fd=M) per process holding the socket.
_SS_LINE = re.compile(r"^\S+\s+\d+\s+\d+\s+\S+:(\d+)\s")
_SS_PID = re.compile(r"\bpid=(\d+),")


def listening_port(host: TestHost, unit: str, timeout: float = 30) -> int:
    """The TCP port the main process of `unit` on `host` listens on (the unit's server was
    started with port 0, so the kernel chose a free port as the server bound it). Read with
    `ss -ltnp` inside the host: the server's own output may sit in a pipe buffer. Fails
    with the unit's state when it ends, or does not listen in `timeout` seconds."""
    deadline = time.monotonic() + timeout
    service = unit if "." in unit else f"{unit}.service"
    while True:
        pid = host.nsenter(["systemctl", "show", "-P", "MainPID", service]).stdout.strip()
        for line in host.nsenter(["ss", "-Hltnp"]).stdout.splitlines():
            match = _SS_LINE.match(line)
            if match and pid not in ("", "0") and pid in _SS_PID.findall(line):
                return int(match.group(1))
        if pid in ("", "0") or time.monotonic() > deadline:
            state = host.nsenter(["systemctl", "status", "--no-pager", "-n", "30", service])
            raise AssertionError(
                f"{service} is not listening (MainPID {pid or '?'}):\n" + state.stdout
            )
        time.sleep(0.2)


# Below Linux's default ephemeral range (net.ipv4.ip_local_port_range 32768-60999).
SERVICE_PORTS = range(20000, 32768)


def service_port() -> int:
    """A free loopback port for a service whose port is configured before it starts (a
    deployed unit's --port, where the product waits for it) or that a test stops and
    starts again on it.

    Outside the ephemeral range: there the kernel hands a port that is free for a moment
    (between the pick and the start, or a stop and the next start) to any process's
    outgoing connection or bind(0), and the service then cannot bind it.
    """
    for port in random.sample(SERVICE_PORTS, 50):
        with socket.socket() as s:
            try:
                s.bind((LOOPBACK, port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free loopback port in {SERVICE_PORTS}")
