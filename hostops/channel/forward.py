"""A local port forward (`ssh -L`) served inside this process over an SSH connection.

Why: a vLLM server bound to loopback on a GPU host (`--host 127.0.0.1`, a safe setup)
cannot be reached from the worker, yet the benchmark runs in the worker. `LocalForward`
listens on an ephemeral port of 127.0.0.1 here; every connection accepted there is carried
to an address on the host by its own SSH "direct-tcpip" channel (RFC 4254 §7.2), which the
host's sshd connects to that address. The HTTP client then talks to the local port.

paramiko facts relied on:
- `Transport.open_channel("direct-tcpip", dest_addr, src_addr)` asks the server to
  connect `dest_addr` and returns a `Channel`, or raises `SSHException` (a
  `ChannelException` with the RFC 4254 reason code when the server refused) (paramiko
  `transport.py`, `Transport.open_channel`; its `demos/forward.py` serves a local port
  the same way, one channel per accepted connection).
- `Channel.fileno()` is a pipe for polling only (readable when data or EOF arrived), so a
  channel and a socket can be waited on together with `selectors`; `Channel.recv` returns
  b"" at EOF; `Channel.close()` is thread-safe (paramiko `channel.py`).

Threads: one accepts, one per connection copies bytes both ways. `close()` wakes them all
through one pipe, shuts the sockets and channels down and joins every thread, so nothing
outlives the forward: no thread, no listening port, no channel.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import paramiko

from .errors import TransportError

LISTEN_ADDRESS = "127.0.0.1"
_CHUNK = 1 << 16
JOIN_TIMEOUT_S = 5.0
MAX_ERRORS_KEPT = 5

# Opens the channel for one accepted connection; its argument is that connection's peer
# address (sshd logs it as the forward's origin).
ChannelOpener = Callable[[tuple[str, int]], paramiko.Channel]


@dataclass
class ForwardStats:
    """What went through the forward (for the transport's command record)."""

    connections: int = 0
    bytes_to_host: int = 0
    bytes_from_host: int = 0
    errors: list[str] = field(default_factory=list)


class LocalForward:
    """Serves `LISTEN_ADDRESS:<ephemeral port>` until `close()`; see the module docstring."""

    def __init__(self, open_channel: ChannelOpener, *, name: str = "ssh-forward") -> None:
        self._open_channel = open_channel
        self._listener = socket.create_server((LISTEN_ADDRESS, 0))
        self.port: int = self._listener.getsockname()[1]
        self.name = f"{name}-{self.port}"
        self.stats = ForwardStats()
        self._lock = threading.Lock()
        self._closed = False
        self._wake_read, self._wake_write = os.pipe()
        self._live: dict[threading.Thread, tuple[socket.socket, paramiko.Channel | None]] = {}
        self._threads: list[threading.Thread] = []
        self._acceptor = threading.Thread(target=self._accept_loop, name=self.name, daemon=True)

    @property
    def address(self) -> tuple[str, int]:
        return LISTEN_ADDRESS, self.port

    def start(self) -> LocalForward:
        self._acceptor.start()
        return self

    # -- accepting ------------------------------------------------------------------------
    def _accept_loop(self) -> None:
        with selectors.DefaultSelector() as sel:
            sel.register(self._listener, selectors.EVENT_READ)
            sel.register(self._wake_read, selectors.EVENT_READ)
            while True:
                if any(key.fd == self._wake_read for key, _ in sel.select()):
                    return
                try:
                    sock, peer = self._listener.accept()
                except OSError:
                    continue  # the client gave up before we accepted
                if not self._start_connection(sock, peer):
                    return

    def _start_connection(self, sock: socket.socket, peer: tuple[str, int]) -> bool:
        """A thread for the accepted connection; False (and the socket closed) once closing."""
        # Each chunk from the host is one write: send it at once (no Nagle delay, as on the
        # SSH connection itself: ssh.py `_no_nagle`).
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        thread = threading.Thread(
            target=self._serve, args=(sock, peer), name=f"{self.name}-conn", daemon=True
        )
        with self._lock:
            if self._closed:
                sock.close()
                return False
            self._live[thread] = (sock, None)
            self._threads.append(thread)
            self.stats.connections += 1
        thread.start()
        return True

    # -- one connection -------------------------------------------------------------------
    def _serve(self, sock: socket.socket, peer: tuple[str, int]) -> None:
        me = threading.current_thread()
        chan: paramiko.Channel | None = None
        try:
            chan = self._open_for(sock, peer)
            if chan is not None:
                self._copy_both_ways(sock, chan)
        finally:
            with self._lock:
                self._live.pop(me, None)
            if chan is not None:
                chan.close()
            sock.close()

    def _open_for(self, sock: socket.socket, peer: tuple[str, int]) -> paramiko.Channel | None:
        """The connection's channel (registered so `close()` can shut it), or None when the
        host refused it: the client then sees its connection closed, and the reason is kept."""
        try:
            chan = self._open_channel(peer)
        except TransportError as exc:
            with self._lock:
                if len(self.stats.errors) < MAX_ERRORS_KEPT:
                    self.stats.errors.append(str(exc))
            return None
        with self._lock:
            if self._closed:
                chan.close()
                return None
            self._live[threading.current_thread()] = (sock, chan)
        return chan

    def _copy_both_ways(self, sock: socket.socket, chan: paramiko.Channel) -> None:
        """Until either side ends (EOF or error) or the forward closes. HTTP clients do not
        half-close, so EOF from either side ends the connection, as in paramiko's demo."""
        with selectors.DefaultSelector() as sel:
            sel.register(sock, selectors.EVENT_READ, "to_host")
            sel.register(chan, selectors.EVENT_READ, "from_host")
            sel.register(self._wake_read, selectors.EVENT_READ, "wake")
            while True:
                for key, _ in sel.select():
                    if key.data == "wake" or not self._copy_once(key.data, sock, chan):
                        return

    def _copy_once(self, direction: str, sock: socket.socket, chan: paramiko.Channel) -> bool:
        """Move one chunk in `direction`; False at EOF or when either side failed."""
        try:
            if direction == "to_host":
                data = sock.recv(_CHUNK)
                if data:
                    chan.sendall(data)
            else:
                data = chan.recv(_CHUNK)
                if data:
                    sock.sendall(data)
        except (OSError, EOFError, paramiko.SSHException):
            return False  # a reset or a closed channel ends this connection only
        with self._lock:
            if direction == "to_host":
                self.stats.bytes_to_host += len(data)
            else:
                self.stats.bytes_from_host += len(data)
        return bool(data)

    # -- closing --------------------------------------------------------------------------
    def close(self) -> None:
        """Stop accepting, end every connection, join every thread (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            live = list(self._live.values())
        os.write(self._wake_write, b"x")  # never read: every selector sees it from now on
        for sock, chan in live:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in sendall
            if chan is not None:
                chan.close()  # ... or in a channel send waiting for window space
        threads = [t for t in (self._acceptor, *self._threads) if t.ident is not None]
        for thread in threads:
            thread.join(JOIN_TIMEOUT_S)
        self._listener.close()
        if not any(t.is_alive() for t in threads):
            os.close(self._wake_read)
            os.close(self._wake_write)

    def __enter__(self) -> LocalForward:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["ChannelOpener", "ForwardStats", "LocalForward"]
