"""Opening an SSH channel with a bounded wait, without leaving a late channel open.

Why: paramiko 5.1.0 `Transport.open_channel(kind, …, timeout=…)` (paramiko/transport.py)
registers the channel, sends CHANNEL_OPEN and, when `timeout` passes without an answer,
raises `SSHException("Timeout opening channel.")` and forgets the open: nothing is sent
to the server, whose answer may still come (RFC 4254 §5.1 has no way to cancel an open).
The channel sits only in `Transport._channels`, a `weakref.WeakValueDictionary`
(`ChannelMap`), so once the exception is gone the Channel object usually is too; the late
OPEN_CONFIRMATION then finds nothing (`_parse_channel_open_success` logs "Success for
unrequested channel! [??]") and the channel stays open on the server until the
connection ends. A session channel counts against sshd's MaxSessions (10 per connection
by default, sshd_config(5)); a "direct-tcpip" one keeps sshd's TCP connection to its
destination. Seen on the test host: with sshd stopped, every retried open of
`SSHTransport._open` became such a session, and after ten of them sshd refused every
later session on the connection (tests/deploys/test_transport_ssh.py).

So `open_channel` lets paramiko wait for the answer without a bound, in a thread of its
own (paramiko still gives up when the connection dies: its wait loop checks
`Transport.active`), and bounds only the caller's wait. A channel that opens after the
caller gave up is closed at once, which frees it on the server.
"""

from __future__ import annotations

import math
import threading

import paramiko

THREAD_NAME = "ssh-channel-open"
Address = tuple[str, int]


class _PendingOpen:
    """One open's outcome, handed from the opening thread to the caller unless the caller
    gave up first (then the opening thread closes what it got)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.abandoned = False
        self.channel: paramiko.Channel | None = None
        self.error: BaseException | None = None


def open_channel(
    transport: paramiko.Transport,
    kind: str,
    timeout: float,
    dest_addr: Address | None = None,
    src_addr: Address | None = None,
) -> paramiko.Channel:
    """`transport.open_channel(kind, dest_addr, src_addr)` waiting at most `timeout` s.

    Raises what paramiko raises (`ChannelException` for a refusal), or `SSHException` when
    no answer came in time; the channel is then closed when, if ever, it opens.
    """
    pending = _PendingOpen()
    opener = threading.Thread(
        target=_open_unbounded,
        args=(transport, kind, dest_addr, src_addr, pending),
        name=THREAD_NAME,
        daemon=True,
    )
    opener.start()
    pending.done.wait(timeout)
    with pending.lock:
        if not pending.done.is_set():
            pending.abandoned = True
            raise paramiko.SSHException(
                f"Timeout opening channel ({kind}, no answer in {timeout:g} s; "
                "it is closed if it opens later)."
            )
    opener.join()
    if pending.error is not None:
        raise pending.error
    assert pending.channel is not None
    return pending.channel


def _open_unbounded(
    transport: paramiko.Transport,
    kind: str,
    dest_addr: Address | None,
    src_addr: Address | None,
    pending: _PendingOpen,
) -> None:
    channel: paramiko.Channel | None = None
    error: BaseException | None = None
    try:
        channel = transport.open_channel(kind, dest_addr, src_addr, timeout=math.inf)
    except BaseException as exc:
        error = exc
    with pending.lock:
        abandoned = pending.abandoned
        if not abandoned:
            pending.channel, pending.error = channel, error
            pending.done.set()
    if abandoned and channel is not None:
        channel.close()


__all__ = ["THREAD_NAME", "open_channel"]
