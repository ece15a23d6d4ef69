"""SSHTransport.forward_local (`ssh -L` in the worker) against the real test host's sshd.

The test host shares this machine's network namespace, so its loopback is ours too: what
shows that bytes went through sshd is the forward's own port (not the server's), the bytes
the forward counted, and sshd's refusal when its configuration forbids forwarding.
"""

from __future__ import annotations

import gc
import socket
import threading
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from hostops.channel import ForwardRefused
from hostops.channel.records import FORWARD, CommandRecord
from hostops.channel.ssh import SSHTransport
from tests.deploys.helpers import (
    NO_FORWARDING,
    listening,
    reload_sshd,
    sshd_stalled,
    unique,
    wait_for,
)
from tests.ports import listening_port, refusing_port
from tests.testhost.host import TestHost

pytestmark = pytest.mark.testhost
HTTP_SERVER = ("python3", "-m", "http.server", "--directory", "/etc")


@pytest.fixture
def loopback_server(testhost: TestHost) -> Iterator[tuple[str, int]]:
    """An HTTP server on the host bound to 127.0.0.1 only (a transient unit), on a port the
    kernel picks as it binds (port 0)."""
    unit = unique("loopback-http")
    testhost.ssh(
        ["systemd-run", f"--unit={unit}", "--", *HTTP_SERVER, "--bind", "127.0.0.1", "0"],
        check=True,
    )
    try:
        yield unit, listening_port(testhost, unit)
    finally:
        testhost.ssh(["systemctl", "stop", f"{unit}.service"])


def _get(port: int, path: str = "/hostname") -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as response:
        return response.read()


def _forward_threads(port: int) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(f"ssh-forward-{port}")]


def _forward_records(t: SSHTransport) -> list[CommandRecord]:
    return [r for r in t.command_log.peek() if r.kind == FORWARD]


def _connections_to(testhost: TestHost, port: int) -> str:
    """Established TCP connections to `port` (sshd's side of the forwarded ones)."""
    return testhost.nsenter(["ss", "-Htn", "state", "established", f"( dport = :{port} )"]).stdout


def test_a_local_forward_carries_http_to_a_loopback_only_server_and_closes_completely(
    testhost: TestHost,
    make_transport: Callable[..., SSHTransport],
    loopback_server: tuple[str, int],
) -> None:
    _, port = loopback_server
    t = make_transport()
    hostname = testhost.read_file("/etc/hostname").encode()
    with t.forward_local("127.0.0.1", port) as (address, local_port):
        assert (address, local_port != port) == ("127.0.0.1", True)
        assert _forward_threads(local_port), "the forward serves from a thread of its own"
        with ThreadPoolExecutor(4) as pool:
            bodies = list(pool.map(lambda _: _get(local_port), range(8)))
        assert bodies == [hostname] * 8
        # a client still connected when the forward closes (an idle keep-alive connection)
        idle = socket.create_connection(("127.0.0.1", local_port), timeout=10)
        assert wait_for(lambda: _connections_to(testhost, port).strip())
    with idle:
        assert idle.recv(1) == b"", "closing the forward ends the connections through it"
    assert not _forward_threads(local_port), "a forward thread outlived the forward"
    assert not listening(local_port), "the forward's local port still accepts connections"
    assert wait_for(lambda: not _connections_to(testhost, port).strip(), timeout=10), (
        "sshd still holds a forwarded connection to the server"
    )
    [record] = _forward_records(t)
    assert record.argv == ("-L", f"127.0.0.1:{local_port}:127.0.0.1:{port}")
    assert record.exit_code == 0 and record.error == ""
    assert record.stdout_bytes >= 8 * len(hostname)
    assert record.stderr_tail == "9 connections"
    assert t._transport().is_active(), "closing the forward leaves the SSH connection open"
    assert t.run(["true"]).ok


def test_a_forward_to_a_port_where_nothing_listens_is_refused_before_it_is_used(
    make_transport: Callable[..., SSHTransport],
) -> None:
    t = make_transport()
    t.connect()  # paramiko's own thread starts here
    before = {th.name for th in threading.enumerate()}
    with (
        refusing_port() as port,
        pytest.raises(ForwardRefused) as refused,
        t.forward_local("127.0.0.1", port),
    ):
        raise AssertionError("the block must not run when sshd cannot connect")
    assert refused.value.code == ForwardRefused.CONNECT_FAILED
    assert f"sshd refused to forward to 127.0.0.1:{port} on the host" in str(refused.value)
    assert f"@127.0.0.1:{t.port}" in str(refused.value)
    assert {th.name for th in threading.enumerate()} <= before
    [record] = _forward_records(t)
    assert record.exit_code is None and record.error.startswith("ForwardRefused: ")


def test_connections_refused_while_the_forward_is_open_are_counted_and_kept_in_the_record(
    testhost: TestHost,
    make_transport: Callable[..., SSHTransport],
    loopback_server: tuple[str, int],
) -> None:
    unit, port = loopback_server
    t = make_transport()
    with t.forward_local("127.0.0.1", port) as (_, local_port):
        assert _get(local_port)
        testhost.ssh(["systemctl", "stop", f"{unit}.service"], check=True)
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            _get(local_port)  # closed at once: the host refused that connection's channel
    [record] = _forward_records(t)
    assert record.exit_code == 1
    assert record.stderr_tail.startswith("2 connections; ")
    assert f"sshd refused to forward to 127.0.0.1:{port}" in record.stderr_tail


def test_sshd_with_tcp_forwarding_off_refuses_the_forward_as_administratively_prohibited(
    testhost: TestHost, make_transport: Callable[..., SSHTransport]
) -> None:
    """sshd_config(5) AllowTcpForwarding no; sshd reads sshd_config.d/ in name order and
    keeps a keyword's first value, and each new connection reads the reloaded file."""
    testhost.write_file(NO_FORWARDING, "AllowTcpForwarding no\n")
    try:
        reload_sshd(testhost)
        t = make_transport()
        with pytest.raises(ForwardRefused) as refused, t.forward_local("127.0.0.1", 9):
            raise AssertionError("the block must not run when sshd forbids forwarding")
    finally:
        testhost.nsenter(["rm", "-f", NO_FORWARDING])
        reload_sshd(testhost)
    assert refused.value.code == ForwardRefused.ADMINISTRATIVELY_PROHIBITED
    assert "Administratively prohibited" in str(refused.value)


def test_the_ssh_connection_sends_small_packets_at_once_without_nagles_delay(
    make_transport: Callable[..., SSHTransport],
) -> None:
    """A forwarded stream's chunks are small SSH packets; with Nagle's algorithm each one
    could wait for a delayed ACK (ssh.py `_no_nagle`; benchmarks/forward_overhead.py)."""
    t = make_transport()
    t.connect()
    assert t._transport().sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0


def test_a_forward_channel_that_opens_after_its_open_timed_out_is_closed_on_the_host(
    testhost: TestHost,
    make_transport: Callable[..., SSHTransport],
    loopback_server: tuple[str, int],
) -> None:
    # sshd stalled: the channel for an accepted connection gets no answer in time and the
    # client's connection is closed. sshd then connects to the server and confirms the
    # channel late; a channel nobody closes would keep that connection open for good.
    _, port = loopback_server
    t = make_transport()
    with t.forward_local("127.0.0.1", port) as (_, local_port):
        t.connect_timeout = 0.2  # how long an open waits for its answer (not the probe's)
        with sshd_stalled(testhost, t):
            client = socket.create_connection(("127.0.0.1", local_port), timeout=30)
            with client:
                assert client.recv(1) == b"", "the forward closes a connection it cannot carry"
            # Whether paramiko still has the timed-out Channel object when the answer comes
            # depends on when Python collects it (`Transport._channels` holds it weakly);
            # collected, the answer is dropped and nothing can close the channel.
            gc.collect()
        t.connect_timeout = 10
        # sshd handles messages in order: once this command ran, it has answered the
        # forward's late open (and connected to the server) before.
        assert t.run(["true"]).ok
        assert wait_for(lambda: not _connections_to(testhost, port).strip()), (
            "sshd still holds the late forwarded connection to the server"
        )
    [record] = _forward_records(t)
    assert record.stderr_tail.startswith("1 connections; ")
    assert "refused another port forward" in record.stderr_tail
