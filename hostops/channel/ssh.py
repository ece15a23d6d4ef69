"""SSH transport (paramiko) with a pinned host key.

paramiko facts relied on (paramiko docs: SSHClient.connect, Channel, SFTPClient):
- `SSHClient.connect` looks the server up in `get_host_keys()` under `host` (port 22) or
  `[host]:port`; a different key raises `BadHostKeyException`, an unknown host goes to the
  missing-host-key policy. We load only the pinned key and use a `RejectPolicy`, so nothing
  is ever learned (never `AutoAddPolicy`). paramiko also puts the pinned key's type first
  in its host-key algorithm list, so the server presents the key type we pinned.
- A channel's stdout/stderr windows fill up if not read: a command writing a lot to both
  would block forever if we waited for `recv_exit_status()` first. We drain both streams
  until EOF, under one deadline, and only then collect the exit status.
- `SFTPClient` is not safe to share across threads: one per thread (thread-local), all on
  the one SSH connection. `posix_rename` (posix-rename@openssh.com) replaces the target
  atomically, unlike SFTP `rename`, which fails when the target exists.
- paramiko's pipelined writes never check the server's answers (paramiko sftp_file.py
  `_write` queues them; `_close` waits only for requests registered to the file, which
  writes are not) and `SFTPFile.close()` swallows a failed CLOSE (`except (IOError,
  socket.error): pass`). So writes here are not pipelined (each waits for its status),
  CLOSE is sent and checked by `_close_checked`, and the file is read back on the host
  before the rename (`Transport.stage_file`).
- `Transport.open_channel("direct-tcpip", dest_addr, src_addr, timeout=…)` opens a port
  forward on the same connection; a refusal raises `ChannelException` carrying the RFC 4254
  §5.1 reason code (paramiko `transport.py`, `_parse_channel_open_failure`). OpenSSH
  answers 1 (administratively prohibited) when sshd_config's `AllowTcpForwarding` /
  `DisableForwarding` / `PermitOpen` forbid it, and 2 (connect failed) when nothing
  listens at the destination (sshd_config(5); `forward_local` below).
- That call's `timeout` only stops the wait: a channel the server confirms later stays open
  there (a session counts against MaxSessions). Every channel here is therefore opened by
  `channel_open.open_channel`, which closes such a late channel (its docstring cites why).
"""

from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import posixpath
import secrets
import select
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, NamedTuple, TypeVar

import paramiko
from paramiko.message import Message
from paramiko.sftp import CMD_CLOSE

from .base import (
    DEFAULT_COMMAND_TIMEOUT,
    TEMP_INFIX,
    CommandResult,
    StagedFile,
    Transport,
    regular_file_problem,
)
from .bounds import CappedBuffer, output_buffers
from .channel_open import open_channel
from .errors import (
    AuthenticationFailed,
    CommandTimeout,
    ConnectionLost,
    DiskFull,
    FileRefused,
    ForwardRefused,
    HostKeyMismatch,
    HostUnreachable,
    TransportError,
    WriteFailed,
)
from .forward import LISTEN_ADDRESS, LocalForward
from .records import CONNECT, FORWARD, REMOVE, CommandRecord

T = TypeVar("T")
KEEPALIVE_SECONDS = 15
_CHUNK = 1 << 16
# Every command runs under `timeout(1)` on the host: a channel we stop listening to does
# not stop the command there (OpenSSH refuses the "signal" request for root sessions, see
# _send_signal). timeout(1) sends SIGTERM to the command's process group at the bound and
# SIGKILL HOST_KILL_AFTER_S later; exit 124 (or 137 after the KILL) means it did.
# We wait for the channel a little longer than that, so the host's verdict arrives first.
HOST_KILL_AFTER_S = 5.0
CHANNEL_GRACE_S = HOST_KILL_AFTER_S + 5.0
TIMEOUT_EXIT_CODES = (124, 137)


# --------------------------------------------------------------------------------------
# host keys


def fingerprint_sha256(key: paramiko.PKey) -> str:
    """`SHA256:<base64 without padding>` of the public key blob, as `ssh-keygen -l` shows."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def parse_pinned_key(line: str) -> paramiko.PKey:
    """A public key from `type base64 [comment]` or a known_hosts line `host type base64`.

    The host part of a known_hosts line is informational: the key is pinned to this
    transport's host and port regardless.
    """
    parts = line.strip().split()
    if parts and parts[0].startswith("@"):
        raise ValueError("known_hosts markers (@cert-authority, @revoked) are not supported")
    for i in (0, 1):
        if len(parts) < i + 2:
            break
        try:
            blob = base64.b64decode(parts[i + 1], validate=True)
            return paramiko.PKey.from_type_string(parts[i], blob)
        except Exception:
            continue
    raise ValueError(f"not an SSH public key line: {line[:80]!r}")


class HostKeyInfo(NamedTuple):
    """The key a host presents; `known_hosts_line` is what gets pinned after confirmation."""

    key_type: str
    base64: str
    fingerprint_sha256: str

    def known_hosts_line(self, host: str, port: int = 22) -> str:
        name = host if port == 22 else f"[{host}]:{port}"
        return f"{name} {self.key_type} {self.base64}"


def probe_host_key(
    host: str, port: int = 22, timeout: float = 10.0, key_type: str | None = None
) -> HostKeyInfo:
    """Handshake without authenticating and return the host key it presents.

    For "adding a host shows the fingerprint it presents": an admin compares it out of band
    before pinning. `key_type` (e.g. "ssh-ed25519") asks for that type of host key.
    """
    try:
        sock = socket.create_connection((host, port), timeout=timeout)
    except UnicodeError as exc:  # the IDNA codec: a label over 63 letters, an empty one
        raise HostUnreachable(f"{host[:80]!r} is not a valid host name: {exc}") from None
    except OSError as exc:
        raise HostUnreachable(f"cannot connect to {host}:{port}: {exc}") from exc
    transport = paramiko.Transport(sock)
    try:
        transport.banner_timeout = timeout
        transport.handshake_timeout = timeout
        if key_type:
            opts = transport.get_security_options()
            opts.key_types = [key_type] + [t for t in opts.key_types if t != key_type]
        transport.start_client(timeout=timeout)
        key = transport.get_remote_server_key()
    except (paramiko.SSHException, EOFError, OSError) as exc:
        raise HostUnreachable(f"{host}:{port} did not complete an SSH handshake: {exc}") from exc
    finally:
        transport.close()
    return HostKeyInfo(key.get_name(), key.get_base64(), fingerprint_sha256(key))


class _PinnedRejectPolicy(paramiko.RejectPolicy):
    """RejectPolicy that says which key was expected (reached only if lookup misses)."""

    def __init__(self, host: str, port: int, expected: paramiko.PKey) -> None:
        self._host, self._port, self._expected = host, port, expected

    def missing_host_key(self, client: paramiko.SSHClient, hostname: str, key: Any) -> None:
        raise HostKeyMismatch(
            self._host,
            self._port,
            fingerprint_sha256(self._expected),
            fingerprint_sha256(key),
            key.get_name(),
        )


# --------------------------------------------------------------------------------------


def quote_argv(argv: Sequence[str | bytes]) -> bytes:
    """The one place argv becomes a command line: each element `shlex.quote`d.

    sshd runs the command with the user's login shell (`$SHELL -c`), a POSIX shell for the
    accounts we use. bytes elements (non-UTF-8 file names) travel unchanged via
    surrogateescape.
    """
    words = [a.decode("utf-8", "surrogateescape") if isinstance(a, bytes) else str(a) for a in argv]
    return shlex.join(words).encode("utf-8", "surrogateescape")


def _send_signal(chan: paramiko.Channel, name: str) -> None:
    """RFC 4254 §6.9 "signal" request (paramiko has no public API for it).

    OpenSSH ≥ 7.9 delivers it to the session's process group, so a timed-out command is
    killed instead of running on after we stop listening. Best effort only: OpenSSH 9.2
    refuses it for root sessions ("session signalling requires privilege separation", seen
    on the test host), and closing a channel without a pty does not kill the command either.
    That is why every command also runs under `timeout(1)` on the host (`SSHTransport._run`).
    """
    try:
        m = Message()
        m.add_byte(bytes([98]))  # SSH_MSG_CHANNEL_REQUEST
        m.add_int(chan.remote_chanid)
        m.add_string("signal")
        m.add_boolean(False)
        m.add_string(name)
        chan.transport._send_user_message(m)
    except Exception:
        pass


class SSHTransport(Transport):
    """Commands and files on one host over one reused SSH connection.

    `pinned_host_key`: "ssh-ed25519 AAAA…" (optionally prefixed by a known_hosts host
    field). Authenticate with `key_filename` (unencrypted private key readable by the
    worker) and/or the SSH agent (`use_agent`); ~/.ssh keys are never searched.
    """

    def __init__(
        self,
        host: str,
        port: int = 22,
        username: str = "root",
        *,
        pinned_host_key: str,
        key_filename: str | None = None,
        use_agent: bool = False,
        connect_timeout: float = 10.0,
        command_timeout: float = DEFAULT_COMMAND_TIMEOUT,
        keepalive: int = KEEPALIVE_SECONDS,
    ) -> None:
        if not key_filename and not use_agent:
            raise ValueError("SSHTransport needs key_filename or use_agent=True")
        self.host = host
        self.port = int(port)
        self.username = username
        self.pinned_key = parse_pinned_key(pinned_host_key)
        self.key_filename = key_filename
        self.use_agent = use_agent
        self.connect_timeout = connect_timeout
        self.command_timeout = command_timeout
        self.keepalive = keepalive
        self.last_connect_seconds: float | None = None
        self._client: paramiko.SSHClient | None = None
        self._generation = 0
        self._lock = threading.RLock()
        self._tls = threading.local()
        # Every thread's SFTP client, so close() and reconnects can close them all and a
        # finished thread's client (and its channel, counted by sshd's MaxSessions) is freed.
        self._sftps: dict[threading.Thread, paramiko.SFTPClient] = {}
        self._closed = False

    def __repr__(self) -> str:
        return f"SSHTransport({self.username}@{self.host}:{self.port})"

    @property
    def pinned_fingerprint(self) -> str:
        return fingerprint_sha256(self.pinned_key)

    # -- connection ----------------------------------------------------------------------
    def connect(self) -> None:
        """Connect now (otherwise the first operation does); errors as in the hierarchy."""
        self._transport()

    def _transport(self) -> paramiko.Transport:
        with self._lock:
            if self._closed:
                raise TransportError(f"{self!r} is closed")
            if self._client is not None:
                t = self._client.get_transport()
                if t is not None and t.is_active():
                    return t
                self._drop_locked()
            with self.command_log.recording(CONNECT, [f"{self.username}@{self.host}:{self.port}"]):
                self._client = self._connect()
            self._generation += 1
            t = self._client.get_transport()
            assert t is not None
            return t

    def _load_pkey(self) -> paramiko.PKey | None:
        if not self.key_filename:
            return None
        try:
            return paramiko.PKey.from_path(self.key_filename)
        except paramiko.PasswordRequiredException as exc:
            raise AuthenticationFailed(
                f"private key {self.key_filename} is passphrase-protected; use the SSH agent"
            ) from exc
        except (OSError, paramiko.SSHException, ValueError) as exc:
            raise AuthenticationFailed(
                f"cannot load private key {self.key_filename}: {type(exc).__name__}: {exc}"
            ) from exc

    def _connect(self) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        # Our own known-hosts store: only the pinned key, under the name paramiko looks up.
        name = self.host if self.port == 22 else f"[{self.host}]:{self.port}"
        client.get_host_keys().add(name, self.pinned_key.get_name(), self.pinned_key)
        client.set_missing_host_key_policy(
            _PinnedRejectPolicy(self.host, self.port, self.pinned_key)
        )
        where = f"{self.username}@{self.host}:{self.port}"
        pkey = self._load_pkey()
        started = time.monotonic()
        try:
            client.connect(
                hostname=self.host,
                port=self.port,
                username=self.username,
                pkey=pkey,
                allow_agent=self.use_agent,
                look_for_keys=False,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
            )
        except TransportError:
            client.close()
            raise
        except paramiko.BadHostKeyException as exc:
            client.close()
            raise HostKeyMismatch(
                self.host,
                self.port,
                fingerprint_sha256(exc.expected_key),
                fingerprint_sha256(exc.key),
                exc.key.get_name(),
            ) from None
        except paramiko.AuthenticationException as exc:
            client.close()
            how = f"key {self.key_filename}" if self.key_filename else "no key file"
            how += ", agent" if self.use_agent else ""
            raise AuthenticationFailed(f"{where} refused authentication ({how}): {exc}") from None
        except paramiko.SSHException as exc:
            client.close()
            text = str(exc)
            if "No authentication methods available" in text:
                raise AuthenticationFailed(f"{where}: no usable key (agent empty?)") from None
            # "Error reading SSH protocol banner": not an SSH server, or it hung.
            raise HostUnreachable(f"{where}: SSH handshake failed: {text}") from exc
        except UnicodeError as exc:  # the IDNA codec: a label over 63 letters, an empty one
            client.close()
            raise HostUnreachable(f"{self.host[:80]!r} is not a valid host name: {exc}") from None
        except (OSError, EOFError) as exc:
            client.close()
            raise HostUnreachable(f"cannot connect to {self.host}:{self.port}: {exc}") from exc
        self.last_connect_seconds = time.monotonic() - started
        t = client.get_transport()
        assert t is not None
        t.set_keepalive(self.keepalive)
        _no_nagle(t.sock)
        return client

    def _drop_locked(self) -> None:
        for sftp in self._sftps.values():
            with contextlib.suppress(Exception):
                sftp.close()
        self._sftps.clear()
        if self._client is not None:
            self._client.close()
            self._client = None

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._drop_locked()

    def reconnect(self) -> None:
        """Drop the connection (and every SFTP client on it); the next operation connects
        anew with the same pinned key."""
        with self._lock:
            self._drop_locked()

    # -- commands ------------------------------------------------------------------------
    def _open(self, what: str, opener: Callable[[paramiko.Transport], T], deadline: float) -> T:
        """Open a channel (session or SFTP) with `opener`, coping with two conditions.

        - Stale connection (host rebooted, NAT dropped it): nothing has run yet, so one
          reconnect is safe. Only the connection that failed is dropped: another thread
          may already have replaced it.
        - sshd refusing another channel on a live connection ("open failed", MaxSessions,
          default 10 per connection, sshd_config(5)), or not answering in time: wait for a
          channel to close and retry until the deadline, never tearing down the other
          threads' channels. Retrying after a timeout is safe only because `opener` uses
          `channel_open.open_channel`, which closes a channel the server confirms late:
          paramiko's own `open_channel` timeout leaves it open on the server (see there).
        """
        delay = 0.02
        reconnected = False
        while True:
            t = self._transport()
            try:
                return opener(t)
            except (paramiko.SSHException, EOFError, OSError) as exc:
                # paramiko reports a refused open as ChannelException, or, when threads race
                # for its saved exception, as a bare "Unable to open channel." SSHException.
                failure: BaseException = exc
                if t.is_active() and isinstance(exc, paramiko.SSHException):
                    if time.monotonic() + delay >= deadline:
                        raise TransportError(
                            f"{self!r}: the host refused another {what} on this connection, "
                            f"or did not answer in time ({exc}; sshd MaxSessions reached, or "
                            "the host too busy to answer?)"
                        ) from exc
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
            if reconnected or t.is_active():
                raise ConnectionLost(f"{self!r}: cannot open {what}: {failure}") from failure
            with self._lock:
                current = self._client.get_transport() if self._client is not None else None
                if current is t:
                    self._drop_locked()
            reconnected = True

    def host_bound(self, timeout: float | None) -> float:
        return self.command_timeout if timeout is None else timeout

    def _run(
        self,
        argv: Sequence[str | bytes],
        *,
        timeout: float | None = None,
        input: bytes | None = None,
    ) -> CommandResult:
        """argv under `timeout(1)` on the host; CommandTimeout when the host ended it."""
        argv_list = [a if isinstance(a, str) else a.decode(errors="replace") for a in argv]
        if not argv_list:
            raise ValueError("empty argv")
        bound = self.host_bound(timeout)
        bounded = ["timeout", f"--kill-after={HOST_KILL_AFTER_S:g}s", f"{bound:.3f}s", *argv]
        result = self._exec(bounded, argv_list, bound + CHANNEL_GRACE_S, input)
        if result.exit_code in TIMEOUT_EXIT_CODES and result.duration >= bound - 0.05:
            raise CommandTimeout(argv_list, bound, result.stdout, result.stderr)
        return result

    def _exec(
        self,
        argv: Sequence[str | bytes],
        argv_list: list[str],
        timeout: float,
        input: bytes | None,
    ) -> CommandResult:
        """One SSH exec of exactly `argv`, waiting up to `timeout` for the channel."""
        command = quote_argv(argv)
        started = time.monotonic()
        deadline = started + timeout
        chan = self._open(
            "session",
            lambda t: open_channel(t, "session", min(timeout, self.connect_timeout)),
            deadline,
        )
        out, err = output_buffers()
        try:
            chan.exec_command(command)
            _send_stdin(chan, input)
            self._drain_until_eof(chan, out, err, deadline, argv_list, timeout)
            # Output is complete; the exit status follows (or the channel closes).
            if not chan.status_event.wait(max(0.0, deadline - time.monotonic())):
                raise _timeout(argv_list, timeout, out, err)
            exit_code = chan.recv_exit_status()  # -1: killed by a signal (no exit-status)
        except CommandTimeout:
            _send_signal(chan, "KILL")
            raise
        except (paramiko.SSHException, EOFError, OSError) as exc:
            raise ConnectionLost(f"{self!r}: {argv_list!r} interrupted: {exc}") from exc
        finally:
            chan.close()
        return CommandResult(
            exit_code,
            out.head(),
            err.value(stream="stderr"),
            time.monotonic() - started,
            stdout_dropped=out.dropped,
            stderr_dropped=err.dropped,
        )

    def _drain_until_eof(
        self,
        chan: paramiko.Channel,
        out: CappedBuffer,
        err: CappedBuffer,
        deadline: float,
        argv_list: list[str],
        timeout: float,
    ) -> None:
        """Read stdout and stderr into `out`/`err` until the command's EOF (both streams,
        so neither window fills up: module docstring); CommandTimeout past `deadline`.
        Past the caps the bytes are still read (the window must not fill) but not kept."""
        while True:
            _read_available(chan, out, err)
            if chan.eof_received and not chan.recv_ready() and not chan.recv_stderr_ready():
                return
            if chan.closed:
                # paramiko's transport thread may have handled EOF and CLOSE between
                # our two checks (a command that ends at once): drain, then done.
                if chan.eof_received:
                    continue
                raise ConnectionLost(f"{self!r}: connection lost while running {argv_list!r}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise _timeout(argv_list, timeout, out, err)
            select.select([chan], [], [], min(remaining, 1.0))

    # -- port forwards -------------------------------------------------------------------
    @contextlib.contextmanager
    def forward_local(self, address: str, port: int) -> Iterator[tuple[str, int]]:
        """`ssh -L` for the with-block: yields (127.0.0.1, an ephemeral port) of this process
        that lead to `address:port` as the host itself sees it (its loopback included).

        One channel is opened and closed first, so a forward sshd refuses (forwarding off,
        nothing listening) raises ForwardRefused here, before the caller relies on it. The
        forward is one record in `command_log` (`-L local:address:port`), written when it
        closes: its lifetime, the bytes back from the host, the connections it refused.
        """
        dest = (address.strip("[]"), int(port))
        forward = LocalForward(lambda peer: self._open_forward_channel(dest, peer))
        argv = ("-L", f"{LISTEN_ADDRESS}:{forward.port}:{address}:{port}")
        started_wall, started = time.time(), time.monotonic()
        try:
            self._open_forward_channel(dest, forward.address).close()
        except BaseException as exc:
            forward.close()
            error = f"{type(exc).__name__}: {exc}"[:500]
            self.command_log.add(
                CommandRecord(
                    FORWARD, argv, None, time.monotonic() - started, started_wall, error=error
                )
            )
            raise
        try:
            yield forward.start().address
        finally:
            forward.close()
            stats = forward.stats
            self.command_log.add(
                CommandRecord(
                    FORWARD,
                    argv,
                    1 if stats.errors else 0,
                    time.monotonic() - started,
                    started_wall,
                    stdout_bytes=stats.bytes_from_host,
                    stderr_tail="; ".join([f"{stats.connections} connections", *stats.errors]),
                )
            )

    def _open_forward_channel(
        self, dest: tuple[str, int], peer: tuple[str, int]
    ) -> paramiko.Channel:
        """A "direct-tcpip" channel to `dest` on the host; ForwardRefused when sshd says no
        (never retried: a refusal is an answer, unlike a MaxSessions wait in `_open`)."""

        def opener(t: paramiko.Transport) -> paramiko.Channel:
            try:
                return open_channel(t, "direct-tcpip", self.connect_timeout, dest, peer)
            except paramiko.ChannelException as exc:
                where = f"{self.username}@{self.host}:{self.port}"
                raise ForwardRefused(where, dest[0], dest[1], exc.code, exc.text) from None

        chan = self._open("port forward", opener, time.monotonic() + self.connect_timeout)
        chan.settimeout(None)
        return chan

    # -- files ---------------------------------------------------------------------------
    def _sftp(self) -> paramiko.SFTPClient:
        tls = self._tls
        sftp: paramiko.SFTPClient | None = getattr(tls, "sftp", None)
        if sftp is not None and tls.generation == self._generation:
            chan = sftp.get_channel()
            if chan is not None and not chan.closed:
                return sftp
        sftp = self._open("SFTP session", self._open_sftp, time.monotonic() + self.command_timeout)
        assert sftp is not None
        chan = sftp.get_channel()
        if chan is not None:
            chan.settimeout(self.command_timeout)
        tls.sftp, tls.generation = sftp, self._generation
        with self._lock:
            for thread in [th for th in self._sftps if not th.is_alive()]:
                with contextlib.suppress(Exception):
                    self._sftps.pop(thread).close()
            old = self._sftps.pop(threading.current_thread(), None)
            if old is not None and old is not sftp:
                with contextlib.suppress(Exception):
                    old.close()
            self._sftps[threading.current_thread()] = sftp
        return sftp

    def _open_sftp(self, t: paramiko.Transport) -> paramiko.SFTPClient:
        """`SFTPClient.from_transport` (paramiko sftp_client.py: open a session, invoke the
        "sftp" subsystem), with the session opened by `open_channel` (a late one is closed)."""
        chan = open_channel(t, "session", self.connect_timeout)
        try:
            chan.invoke_subsystem("sftp")
            return paramiko.SFTPClient(chan)
        except BaseException:
            chan.close()
            raise

    def release_thread_sftp(self) -> None:
        """Close the calling thread's SFTP client (a worker thread about to finish)."""
        with self._lock:
            sftp = self._sftps.pop(threading.current_thread(), None)
        self._tls.sftp = None
        if sftp is not None:
            with contextlib.suppress(Exception):
                sftp.close()

    def _io_error(self, action: str, path: str, exc: BaseException) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        # paramiko raises SFTP failures as IOError without errno, like a closed socket;
        # whether the connection is still up tells them apart.
        if not self._connected() or isinstance(
            exc, (paramiko.SSHException, EOFError, socket.timeout)
        ):
            return ConnectionLost(f"{self!r}: connection lost during {action} {path}: {exc}")
        return TransportError(f"{self!r}: cannot {action} {path}: {exc}")

    def _connected(self) -> bool:
        client = self._client
        t = client.get_transport() if client is not None else None
        return t is not None and t.is_active()

    def _read_file(self, path: str, limit: int, partial: bool) -> bytes | None:
        """SFTP `stat` first (a FIFO or device is never opened: opening a FIFO would block
        the host's sftp-server), `fstat` of the opened file again (the path may have been
        swapped in between), then at most `limit` bytes (+1, to see a file that grew)."""
        _require_absolute(path)
        sftp = self._sftp()
        try:
            _refuse_unless_regular(path, sftp.stat(path), limit, partial)
            with sftp.open(path, "rb") as f:
                opened = f.stat()
                _refuse_unless_regular(path, opened, limit, partial)
                size = opened.st_size or 0
                if size and not partial:
                    f.prefetch(size)
                data = f.read(limit if partial else limit + 1)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return None
            raise self._io_error("read", path, exc) from exc
        except (paramiko.SSHException, EOFError) as exc:
            raise self._io_error("read", path, exc) from exc
        if len(data) > limit:
            raise FileRefused(path, f"it grew past the {limit:,} bytes specadmin reads")
        return data

    def _remove_file(self, path: str) -> bool:
        _require_absolute(path)
        try:
            self._sftp().remove(path)
        except OSError as exc:
            if exc.errno == errno.ENOENT:
                return False
            raise self._io_error("remove", path, exc) from exc
        except (paramiko.SSHException, EOFError) as exc:
            raise self._io_error("remove", path, exc) from exc
        return True

    def _stage_file(self, path: str, data: bytes, mode: int) -> StagedFile:
        """SFTP upload to `.<name>.specadmin-<random>` beside the target: created with
        O_EXCL, every write's status awaited, chmod-ed, CLOSE checked; then synced and read
        back on the host (`Transport._digest_on_host`). If the connection dies mid-upload
        the temp file stays until `remove_stale_temp_files`; the target is never touched.
        """
        _require_absolute(path)
        directory, name = posixpath.split(path)
        if not name:
            raise ValueError(f"not a file path: {path!r}")
        tmp = posixpath.join(directory, f".{name}{TEMP_INFIX}{secrets.token_hex(6)}")
        sftp = self._sftp()
        created = False
        try:
            f = sftp.open(tmp, "wbx")
            created = True
            try:
                f.set_pipelined(False)  # each write waits for its status (module docstring)
                f.write(data)
                f.chmod(mode)
            finally:
                _close_checked(sftp, f)
            size, sha = self._digest_on_host(tmp)
        except BaseException as exc:
            if created:
                with contextlib.suppress(Exception):
                    sftp.remove(tmp)
            if isinstance(exc, Exception):
                raise self._write_error(path, len(data), exc) from exc
            raise
        return StagedFile(path, tmp, size, sha)

    def _write_error(self, path: str, size: int, exc: BaseException) -> TransportError:
        """The error a failed write raises: DiskFull when the host's filesystem has less
        room than the file (OpenSSH's sftp-server reports ENOSPC as a bare "Failure")."""
        if isinstance(exc, TransportError):  # connection lost, timeout, read back failed
            return exc
        error = self._io_error("write", path, exc)
        if isinstance(error, ConnectionLost):
            return error
        free = self._free_bytes(posixpath.dirname(path))
        if free is not None and free < size + 4096:
            return DiskFull(
                path,
                f"disk full: {posixpath.dirname(path)} on the host has {free:,} bytes free, "
                f"the file needs {size:,} ({exc})",
            )
        return WriteFailed(path, str(exc) or type(exc).__name__)

    def _free_bytes(self, directory: str) -> int | None:
        """Free bytes of the filesystem holding `directory`, as root may use them
        (`stat -f`: free blocks × block size); None when it cannot be read."""
        try:
            result = self._run(["stat", "-f", "-c", "%f %S", "--", directory], timeout=30)
            blocks, block_size = result.stdout_text.split()
            return int(blocks) * int(block_size)
        except (TransportError, ValueError):
            return None

    def _commit_file(self, staged: StagedFile) -> None:
        try:
            self._sftp().posix_rename(staged.temp, staged.path)
        except Exception as exc:
            raise self._io_error("rename into", staged.path, exc) from exc

    def remove_stale_temp_files(self, path: str) -> list[str]:
        """As Transport.remove_stale_temp_files, over SFTP (no shell, no glob quoting)."""
        directory, name = posixpath.split(path)
        prefix = f".{name}{TEMP_INFIX}"
        removed: list[str] = []
        with self.command_log.recording(REMOVE, [f"{directory}/{prefix}*"]):
            sftp = self._sftp()
            try:
                for entry in sftp.listdir(directory):
                    if entry.startswith(prefix):
                        sftp.remove(posixpath.join(directory, entry))
                        removed.append(posixpath.join(directory, entry))
            except Exception as exc:
                raise self._io_error("clean up", directory, exc) from exc
        return removed


def _send_stdin(chan: paramiko.Channel, data: bytes | None) -> None:
    """The command's stdin: `data` from a thread of its own, else EOF at once."""
    if data:
        threading.Thread(
            target=_feed_stdin, args=(chan, data), daemon=True, name="ssh-stdin"
        ).start()
    else:
        chan.shutdown_write()  # EOF on stdin: `cat` and friends do not wait


def _timeout(
    argv: list[str], timeout: float, out: CappedBuffer, err: CappedBuffer
) -> CommandTimeout:
    return CommandTimeout(argv, timeout, out.head(), err.value(stream="stderr"))


def _read_available(chan: paramiko.Channel, out: CappedBuffer, err: CappedBuffer) -> None:
    """Whatever stdout and stderr hold now, without waiting."""
    while chan.recv_ready():
        out.feed(chan.recv(_CHUNK))
    while chan.recv_stderr_ready():
        err.feed(chan.recv_stderr(_CHUNK))


def _refuse_unless_regular(
    path: str, attrs: paramiko.SFTPAttributes, limit: int, partial: bool
) -> None:
    problem = regular_file_problem(attrs.st_mode or 0, attrs.st_size or 0, limit, partial)
    if problem:
        raise FileRefused(path, problem, size=attrs.st_size)


def _close_checked(sftp: paramiko.SFTPClient, f: paramiko.SFTPFile) -> None:
    """Close an SFTP file and check the server's answer (paramiko's `close()` ignores a
    failed CLOSE: module docstring). The file is marked closed first, so paramiko never
    sends a second CLOSE for a handle the server may already have given to another file."""
    if f.closed:
        return
    try:
        f.flush()
    finally:
        f._closed = True  # BufferedFile's own flag (paramiko file.py `close`)
        sftp._request(CMD_CLOSE, f.handle)


def _no_nagle(sock: Any) -> None:
    """TCP_NODELAY on the connection's socket. paramiko sets no socket option itself, and it
    sends each SSH packet with one write: with Nagle's algorithm on, a small packet waits
    for the peer's delayed ACK (~40 ms on Linux) whenever one is unacknowledged. Measured
    through a port forward (benchmarks/forward_overhead.py): TTFT 105 ms instead of 62 ms
    at 74 tok/s; with TCP_NODELAY 63 ms. The same fix in sshtunnel (pahaz/sshtunnel#246)
    and asyncssh (ronf/asyncssh#50). A non-socket (a proxy command) is left alone."""
    with contextlib.suppress(OSError, AttributeError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


def _feed_stdin(chan: paramiko.Channel, data: bytes) -> None:
    """Separate thread: a command may produce output before it reads all of its input."""
    try:
        chan.sendall(data)
        chan.shutdown_write()
    except Exception:
        pass  # the command exited or the channel was closed; run() reports that


def _require_absolute(path: str) -> None:
    if not path.startswith("/") or "\0" in path:
        raise ValueError(f"an absolute path is required: {path!r}")


__all__ = [
    "HostKeyInfo",
    "SSHTransport",
    "fingerprint_sha256",
    "parse_pinned_key",
    "probe_host_key",
    "quote_argv",
]
