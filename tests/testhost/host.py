"""Boot throwaway systemd + sshd test hosts with systemd-nspawn on a tmpfs-backed overlay.

Why an overlay of a real root: the product talks to hosts over SSH and drives systemd; only a
real systemd (journal, daemon-reload, Exec expansion) shows what production will do. Booting
systemd on the machine's own root would run tmpfiles cleanup on the real /tmp, so every boot
happens on an overlay whose upper layer is a tmpfs we own and throw away (docs/architecture.md,
"Testing against real systemd").
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .install import install_doubles as _install

BASE_PARENT = Path("/var/tmp")
BASE_PREFIX = "specadmin-testhost."
STATE_FILE = Path("/var/tmp/specadmin-testhost-state.json")
LOOPBACK = "127.0.0.1"
# Where port claims start. The claims of other runs are seen through BASE_PARENT, so a run
# that cannot see them (the fresh-machine check's container shares the machine's network
# but not its /var/tmp) starts elsewhere.
FIRST_SSH_PORT = int(os.environ.get("SPECADMIN_TESTHOST_FIRST_PORT", "2222"))

# Units of this machine that would fight the real ones for ports/files (the container shares
# the machine's network namespace), or that could reconfigure the shared network.
MASKED_UNITS = (
    "postgresql.service",
    "redis-server.service",
    "redis.service",
    "rabbitmq-server.service",
    "epmd.service",
    "epmd.socket",
    "mariadb.service",
    "mysql.service",
    "mosquitto.service",
    "nats-server.service",
    "cron.service",
    "systemd-networkd.service",
    "systemd-networkd.socket",
    "systemd-networkd-wait-online.service",
    "systemd-resolved.service",
    "systemd-timesyncd.service",
    "apt-daily.timer",
    "apt-daily-upgrade.timer",
    "man-db.timer",
    "e2scrub_all.timer",
    "fstrim.timer",
    "dpkg-db-backup.timer",
    "logrotate.timer",
)


class SshPortTaken(RuntimeError):
    """sshd inside the host could not bind its port: another process took it after it was
    picked (see boot_hosts)."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(f"{host}: sshd could not bind port {port}: another process has it")
        self.port = port


class TestHostError(RuntimeError):
    """A test host could not be booted or reached; the message carries the console tail."""


def _run(argv: Sequence[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    kwargs.setdefault("text", True)
    kwargs.setdefault("capture_output", True)
    return subprocess.run(list(argv), **kwargs)


@dataclass
class TestHost:
    """One booted host: connection details plus helpers that tests call."""

    __test__ = False  # not a pytest test class despite the name

    name: str
    port: int
    base: str
    lower: str
    key_path: str
    host_key: str
    nspawn_pid: int
    owner_pid: int
    user: str = "root"
    host: str = LOOPBACK
    leader_pid: int = 0
    boot_seconds: float = 0.0
    python: str = "/usr/bin/python3"
    extra: dict[str, Any] = field(default_factory=dict)

    # -- paths -------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        """The overlay mount the container boots from (writable, thrown away at teardown)."""
        return Path(self.base) / "root"

    @property
    def known_hosts(self) -> Path:
        return Path(self.base) / "known_hosts"

    @property
    def console_log(self) -> Path:
        return Path(self.base) / "console.log"

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["root"] = str(self.root)
        data["known_hosts"] = str(self.known_hosts)
        data["console_log"] = str(self.console_log)
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TestHost:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})

    # -- commands ----------------------------------------------------------------------
    def ssh_options(self) -> list[str]:
        """Options that pin the generated host key: a wrong key must be refused, not learned."""
        return [
            "-i",
            self.key_path,
            "-p",
            str(self.port),
            "-o",
            f"UserKnownHostsFile={self.known_hosts}",
            "-o",
            "GlobalKnownHostsFile=/dev/null",
            "-o",
            "StrictHostKeyChecking=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "BatchMode=yes",
            "-o",
            "ConnectTimeout=5",
            "-o",
            "LogLevel=ERROR",
        ]

    def ssh(
        self,
        argv: Sequence[str] | str,
        *,
        input: str | None = None,
        timeout: float = 60,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv on the host via the ssh CLI; a list is quoted with shlex at this boundary."""
        remote = argv if isinstance(argv, str) else shlex.join(argv)
        return _run(
            ["ssh", *self.ssh_options(), f"{self.user}@{self.host}", "--", remote],
            input=input,
            timeout=timeout,
            check=check,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    def container_pid(self) -> int:
        """PID (in our namespace) of the container's systemd, found once and cached."""
        if self.leader_pid and _pid_alive(self.leader_pid):
            return self.leader_pid
        pid = _find_container_leader(self.nspawn_pid)
        if pid is None:
            raise TestHostError(
                f"{self.name}: container init of nspawn {self.nspawn_pid} not found"
            )
        self.leader_pid = pid
        return pid

    def nsenter(
        self,
        argv: Sequence[str],
        *,
        input: str | None = None,
        timeout: float = 60,
        check: bool = False,
    ) -> subprocess.CompletedProcess[str]:
        """Run argv inside all the container's namespaces, bypassing SSH (for setup/inspection)."""
        return _run(
            ["nsenter", "-t", str(self.container_pid()), "-a", "--", *argv],
            input=input,
            timeout=timeout,
            check=check,
            stdin=None if input is not None else subprocess.DEVNULL,
        )

    def write_file(self, path: str, text: str, mode: int = 0o644) -> None:
        """Write a file inside the running container (its /run and /tmp are private mounts)."""
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1" && chmod "$2" "$1"'
        self.nsenter(["sh", "-c", script, "sh", path, f"{mode:o}"], input=text, check=True)

    def read_file(self, path: str) -> str:
        return self.nsenter(["cat", path], check=True).stdout

    def systemctl(self, *args: str, check: bool = False) -> subprocess.CompletedProcess[str]:
        return self.nsenter(["systemctl", "--no-pager", *args], check=check)

    def journal(self, unit: str, *, lines: int | None = None, output: str = "cat") -> str:
        """The unit's journal as text (journald flushes asynchronously; callers may retry)."""
        argv = ["journalctl", "--no-pager", "-u", unit, "-o", output]
        if lines is not None:
            argv += ["-n", str(lines)]
        return self.nsenter(argv).stdout

    def console_tail(self, lines: int = 40) -> str:
        try:
            text = self.console_log.read_text(errors="replace")
        except OSError:
            return "(no console log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- lifecycle ---------------------------------------------------------------------
    def stop(self, timeout: float = 20) -> None:
        """Kill the container (no clean poweroff: `_stop_processes`), unmount, remove;
        idempotent.
        Returns once the nspawn process is gone entirely (reaped, not a zombie)."""
        reaped = _stop_processes(self.nspawn_pid, self.leader_pid, timeout)
        _unmount_and_remove(Path(self.base))
        _forget(self)
        if not reaped:
            raise TestHostError(
                f"{self.name}: systemd-nspawn {self.nspawn_pid} ended but its parent did not "
                "reap it within 10 s"
            )


# --------------------------------------------------------------------------------------
# process helpers


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def _ppid(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def _nspid_is_init(pid: int) -> bool:
    """True for PID 1 of a nested PID namespace (the container's systemd)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    ids = line.split()[1:]
                    return len(ids) > 1 and ids[-1] == "1"
    except OSError:
        pass
    return False


def _find_container_leader(nspawn_pid: int) -> int | None:
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            pid = int(entry)
            if _ppid(pid) == nspawn_pid and _nspid_is_init(pid):
                return pid
    return None


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return []


def _wait_gone(pids: Iterable[int], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    pids = [p for p in pids if p > 0]
    while time.monotonic() < deadline:
        if not any(_pid_alive(p) for p in pids):
            return True
        time.sleep(0.1)
    return not any(_pid_alive(p) for p in pids)


def _start_time(pid: int) -> str | None:
    """The process's start time (field 22 of /proc/PID/stat): tells a reused PID apart."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _wait_reaped(pid: int, started: str | None, timeout: float) -> bool:
    """Wait until `pid` has no /proc entry at all. A process that is not our child stays a
    zombie until its parent (the machine's init, after the CLI `up` exited) reaps it: a
    leftover check right after `down` would still see it."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        _reap_child(pid)
        current = _start_time(pid)
        if current is None or current != started:
            return True
        time.sleep(0.05)
    return False


def _reap_child(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _stop_processes(nspawn_pid: int, leader_pid: int, timeout: float) -> bool:
    """SIGKILL to the container's PID 1, which takes its whole PID namespace with it
    (pid_namespaces(7)); nspawn then exits. No clean poweroff: the host is thrown away,
    and a clean one waits out every process that ignores SIGTERM (the vLLM double's
    engine can, by design) until systemd's stop timeout. nspawn itself is killed if it
    has not ended within `timeout`. False when nspawn ended but its parent had not reaped
    it in time."""
    if not leader_pid and _pid_alive(nspawn_pid):
        leader_pid = _find_container_leader(nspawn_pid) or 0
    nspawn_started = _start_time(nspawn_pid) if nspawn_pid > 0 else None
    if _pid_alive(leader_pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(leader_pid, signal.SIGKILL)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _pid_alive(nspawn_pid):
            _reap_child(nspawn_pid)
            time.sleep(0.05)
    for pid in (leader_pid, nspawn_pid):
        if _pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    _wait_gone([leader_pid, nspawn_pid], 10)
    return nspawn_started is None or _wait_reaped(nspawn_pid, nspawn_started, 10)


# --------------------------------------------------------------------------------------
# mounts


def _mountpoints_under(prefix: str) -> list[str]:
    """Mount points at or below prefix, deepest first (so they can be unmounted in order)."""
    points: list[str] = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            mp = line.split()[4].encode().decode("unicode_escape")
            if mp == prefix or mp.startswith(prefix.rstrip("/") + "/"):
                points.append(mp)
    return sorted(set(points), key=lambda p: p.count("/"), reverse=True)


def _own_network(base: Path, port: int) -> list[str]:
    """A network namespace of the host's own (only its loopback, so several hosts can
    serve the same port, as separate machines do) and a forwarder from our loopback's
    `port` to its sshd, so it is reached at 127.0.0.1:port like any test host. Recorded
    in `base` for `_drop_network`; returns the nspawn arguments."""
    name = f"specadmin-{base.name}"[:40]
    try:
        _run(["ip", "netns", "add", name], check=True)
        (base / "netns").write_text(name + "\n")
        _run(["ip", "-n", name, "link", "set", "lo", "up"], check=True)
    except subprocess.CalledProcessError as exc:
        _unmount_and_remove(base)
        raise TestHostError(f"making the network namespace failed: {exc.stderr}") from exc
    inner = f"nsenter --net=/run/netns/{name} socat STDIO TCP\\:{LOOPBACK}\\:{port}"
    forwarder = subprocess.Popen(
        ["socat", f"TCP-LISTEN:{port},bind={LOOPBACK},fork,reuseaddr", f"EXEC:{inner}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    (base / "forwarder.pid").write_text(f"{forwarder.pid}\n")
    return [f"--network-namespace-path=/run/netns/{name}"]


def _drop_network(base: Path) -> None:
    """Stop the forwarder (its whole group) and delete the namespace, if `_own_network`
    made them."""
    pid_file, ns_file = base / "forwarder.pid", base / "netns"
    if pid_file.exists():
        with contextlib.suppress(ProcessLookupError, ValueError):
            os.killpg(int(pid_file.read_text().strip()), signal.SIGTERM)
        pid_file.unlink()
    if ns_file.exists():
        _run(["ip", "netns", "delete", ns_file.read_text().strip()])
        ns_file.unlink()


def _unmount_and_remove(base: Path) -> None:
    _drop_network(base)
    for attempt in range(3):
        points = _mountpoints_under(str(base))
        if not points:
            break
        for mp in points:
            if _run(["umount", mp]).returncode != 0 and attempt == 2:
                _run(["umount", "-l", mp])
        if attempt < 2 and _mountpoints_under(str(base)):
            time.sleep(0.5)
    if _mountpoints_under(str(base)):
        raise TestHostError(f"could not unmount {base}: {_mountpoints_under(str(base))}")
    shutil.rmtree(base, ignore_errors=True)


# --------------------------------------------------------------------------------------
# registry of hosts owned by this process: teardown always runs


_LIVE: dict[str, TestHost] = {}
_LIVE_LOCK = threading.RLock()
_HANDLERS_INSTALLED = False


def _remember(host: TestHost) -> None:
    with _LIVE_LOCK:
        _LIVE[host.base] = host
    _install_handlers()


def _forget(host: TestHost) -> None:
    with _LIVE_LOCK:
        _LIVE.pop(host.base, None)


def detach(host: TestHost) -> None:
    """Hand a host over to the state file (CLI `up`): this process will not tear it down."""
    _forget(host)
    owner = Path(host.base) / "owner"
    owner.write_text("detached\n")


def stop_all() -> None:
    """Tear down every host this process still owns (atexit and signal handlers)."""
    with _LIVE_LOCK:
        hosts = list(_LIVE.values())
    for host in hosts:
        with contextlib.suppress(Exception):
            host.stop()


def _install_handlers() -> None:
    global _HANDLERS_INSTALLED
    if _HANDLERS_INSTALLED:
        return
    _HANDLERS_INSTALLED = True
    atexit.register(stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous = signal.getsignal(sig)
        if previous == signal.SIG_IGN:
            continue  # e.g. SIGINT of a background job: the signal is not meant for us

        def handler(signum: int, frame: Any, previous: Any = previous) -> None:
            stop_all()
            if callable(previous):
                previous(signum, frame)
            else:
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)


# --------------------------------------------------------------------------------------
# boot


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((LOOPBACK, port))
        except OSError:
            return False
    return True


def _claimed_ports() -> set[int]:
    """Ports promised to hosts that may not listen yet (other runs booting right now)."""
    ports: set[int] = set()
    for base in BASE_PARENT.glob(BASE_PREFIX + "*"):
        with contextlib.suppress(OSError, ValueError, KeyError):
            ports.add(int(json.loads((base / "host.json").read_text())["port"]))
    return ports


_PORT_LOCK = threading.Lock()
PORT_LOCK_FILE = Path("/var/tmp/specadmin-testhost-ports.lock")


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    """Serialise port claims across processes (parallel pytest workers, CLI shells)."""
    with open(PORT_LOCK_FILE, "a") as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)


def pick_free_ports(
    count: int, start: int = FIRST_SSH_PORT, avoid: Iterable[int] = ()
) -> list[int]:
    """The first `count` loopback ports from `start` that nobody listens on or has claimed."""
    taken = _claimed_ports() | set(avoid)
    ports: list[int] = []
    port = start
    while len(ports) < count:
        if port > 65000:
            raise TestHostError("no free loopback port")
        if port not in taken and _port_free(port):
            ports.append(port)
        port += 1
    return ports


def _keygen(path: Path, comment: str) -> str:
    _run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


def _find_python(root: Path) -> str | None:
    for candidate in ("usr/bin/python3", "usr/local/bin/python3"):
        if (root / candidate).exists():
            return "/" + candidate
    return None


def _check_prerequisites(lower: Path) -> None:
    if os.geteuid() != 0:
        raise TestHostError("test hosts need root (mount, systemd-nspawn)")
    if not shutil.which("systemd-nspawn"):
        raise TestHostError("systemd-nspawn missing: apt-get install -y systemd-container")
    if not (lower / "usr/sbin/sshd").exists():
        raise TestHostError(f"{lower} has no /usr/sbin/sshd (install openssh-server there)")
    if not any((lower / p).exists() for p in ("lib/systemd/systemd", "usr/lib/systemd/systemd")):
        raise TestHostError(f"{lower} has no systemd")


@dataclass
class _Prepared:
    host: TestHost
    argv: list[str]


def _prepare(
    name: str,
    port: int,
    lower: Path,
    install_doubles: bool,
    gpu_count: int,
    double_config: dict[str, Any] | None,
    nspawn_args: Sequence[str],
    own_network: bool = False,
) -> _Prepared:
    base = Path(tempfile.mkdtemp(prefix=BASE_PREFIX, dir=BASE_PARENT))
    # Claim the port and record ownership first: reap_leftovers() relies on these files.
    (base / "owner").write_text(f"{os.getpid()}\n")
    (base / "host.json").write_text(json.dumps({"name": name, "port": port}))
    up, root = base / "up", base / "root"
    up.mkdir()
    root.mkdir()
    try:
        _run(["mount", "-t", "tmpfs", "-o", "mode=0755", "tmpfs", str(up)], check=True)
        (up / "u").mkdir()
        (up / "w").mkdir()
        opts = f"lowerdir={lower},upperdir={up / 'u'},workdir={up / 'w'}"
        _run(["mount", "-t", "overlay", "overlay", "-o", opts, str(root)], check=True)
    except subprocess.CalledProcessError as exc:
        _unmount_and_remove(base)
        raise TestHostError(f"mounting the overlay failed: {exc.stderr}") from exc

    client_pub = _keygen(base / "client_key", f"specadmin-testhost-{name}")
    host_pub = _keygen(base / "ssh_host_ed25519_key", f"root@{name}")
    host_key = f"[{LOOPBACK}]:{port} {' '.join(host_pub.split()[:2])}"
    (base / "known_hosts").write_text(host_key + "\n")

    etc_ssh = root / "etc/ssh"
    (etc_ssh / "sshd_config.d").mkdir(parents=True, exist_ok=True)
    for old in etc_ssh.glob("ssh_host_*"):
        old.unlink()
    for suffix in ("", ".pub"):
        target = etc_ssh / f"ssh_host_ed25519_key{suffix}"
        shutil.copyfile(base / f"ssh_host_ed25519_key{suffix}", target)
        target.chmod(0o600 if not suffix else 0o644)
    # sshd keeps the first value it reads, and Debian includes sshd_config.d/ first.
    (etc_ssh / "sshd_config.d/00-testhost.conf").write_text(
        f"Port {port}\nListenAddress {LOOPBACK}\nPermitRootLogin prohibit-password\n"
        "HostKey /etc/ssh/ssh_host_ed25519_key\nPasswordAuthentication no\nUseDNS no\n"
    )
    ssh_dir = root / "root/.ssh"
    ssh_dir.mkdir(parents=True, exist_ok=True)
    ssh_dir.chmod(0o700)
    (ssh_dir / "authorized_keys").write_text(client_pub + "\n")
    (ssh_dir / "authorized_keys").chmod(0o600)

    units = root / "etc/systemd/system"
    (units / "multi-user.target.wants").mkdir(parents=True, exist_ok=True)
    for unit in MASKED_UNITS:
        link = units / unit
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to("/dev/null")
    ssh_want = units / "multi-user.target.wants/ssh.service"
    if not ssh_want.is_symlink():
        ssh_want.symlink_to("/lib/systemd/system/ssh.service")
    (root / "etc/hostname").write_text(name + "\n")
    # Distinct machine ids, as distinct hosts have (the lower root's would be shared).
    (root / "etc/machine-id").write_text(os.urandom(16).hex() + "\n")
    # root lingers (loginctl enable-linger: a file named after the user, logind(8)): its
    # user manager starts once at boot and stays. Otherwise every SSH login that comes more
    # than UserStopDelaySec (10 s, logind.conf(5)) after the last one starts user@0.service
    # inside sshd's PAM session set-up (pam_systemd waits for it), and a login during its
    # stop waits for the stop (tests/testhost/README.md).
    linger = root / "var/lib/systemd/linger"
    linger.mkdir(parents=True, exist_ok=True)
    (linger / "root").touch()

    argv = [
        "systemd-nspawn",
        f"--directory={root}",
        "--register=no",
        "--keep-unit",
        "--boot",
        f"--machine={name}",
        "--console=pipe",
    ]
    python = _find_python(root)
    if python is None:
        # A minimal root (debootstrap minbase) has no python: lend ours, read-only, same path.
        # Ours is built against an older glibc than the guests we boot, so it runs there.
        prefix = Path(sys.base_prefix)
        python = str(prefix / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}")
        argv.append(f"--bind-ro={prefix}")
    if install_doubles:
        argv += _install(root, python=python, gpu_count=gpu_count, config=double_config, name=name)
    argv += list(nspawn_args)
    if own_network:
        argv += _own_network(base, port)

    host = TestHost(
        name=name,
        port=port,
        base=str(base),
        lower=str(lower),
        key_path=str(base / "client_key"),
        host_key=host_key,
        nspawn_pid=0,
        owner_pid=os.getpid(),
        python=python,
    )
    return _Prepared(host=host, argv=argv)


def _launch(prep: _Prepared) -> None:
    host = prep.host
    with open(host.console_log, "wb") as console:
        proc = subprocess.Popen(
            prep.argv,
            stdin=subprocess.DEVNULL,
            stdout=console,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # our terminal's Ctrl-C goes to us; we tear down in order
        )
    host.nspawn_pid = proc.pid
    (Path(host.base) / "host.json").write_text(json.dumps(host.to_json(), indent=2))
    _remember(host)


def _sshd_port_taken(host: TestHost) -> bool:
    """Something outside the container listens on sshd's port: seen from here in the
    kernel's socket table, or in sshd's own log ("Bind to port N on ADDR failed: Address
    already in use." then "fatal: Cannot bind any address.", OpenSSH sshd.c server_listen;
    it then exits 255, which ssh.service's RestartPreventExitStatus=255 does not restart).
    The socket table answers even while the container's journal cannot be read (a loaded
    machine, where ssh only times out in the banner exchange)."""
    return _port_held_outside(host) or _sshd_logged_port_taken(host)


def _listening_inodes(port: int) -> set[str]:
    """Socket inodes listening on LOOPBACK:port (or any address), from /proc/net/tcp
    (proc(5): local_address as hex IP:port, st 0A is TCP_LISTEN)."""
    wanted = {f"0100007F:{port:04X}", f"00000000:{port:04X}"}
    inodes: set[str] = set()
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) > 9 and fields[1] in wanted and fields[3] == "0A":
                inodes.add(fields[9])
    return inodes


def _port_held_outside(host: TestHost) -> bool:
    """A process outside the container's PID namespace holds a listening socket on the
    host's port (the container shares our network, not our PIDs: nspawn always gives it
    a PID namespace of its own)."""
    inodes = _listening_inodes(host.port)
    if not inodes:
        return False
    try:
        container_ns = os.readlink(f"/proc/{host.container_pid()}/ns/pid")
    except (TestHostError, OSError):
        return False  # the container's init is not up yet: its sshd cannot be told apart
    targets = {f"socket:[{inode}]" for inode in inodes}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.readlink(proc / "ns/pid") == container_ns:
                continue
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue  # gone meanwhile, or a kernel thread
        if targets & {_readlink_or_empty(fd) for fd in fds}:
            return True
    return False


def _readlink_or_empty(path: Path) -> str:
    """Where a /proc fd link points, or "" for one closed since it was listed."""
    try:
        return os.readlink(path)
    except OSError:
        return ""


def _sshd_logged_port_taken(host: TestHost) -> bool:
    try:
        journal = host.nsenter(
            ["journalctl", "--no-pager", "-o", "cat", "-u", "ssh.service"], timeout=20
        )
    except (TestHostError, subprocess.TimeoutExpired):
        return False  # the container's init is not up yet: nothing has been logged
    return f"Bind to port {host.port} on {LOOPBACK} failed: Address already in use" in (
        journal.stdout
    )


def _wait_running(host: TestHost, started: float, timeout: float) -> None:
    deadline = started + timeout
    last = ""
    journal_checked = started
    while time.monotonic() < deadline:
        if not _pid_alive(host.nspawn_pid):
            raise TestHostError(
                f"{host.name}: systemd-nspawn exited during boot\n--- console tail ---\n"
                + host.console_tail()
            )
        try:
            res = host.ssh(["systemctl", "is-system-running"], timeout=10)
            last = (res.stdout + res.stderr).strip()
            if res.stdout.strip() in ("running", "degraded"):
                host.boot_seconds = round(time.monotonic() - started, 2)
                with contextlib.suppress(TestHostError):
                    host.container_pid()
                (Path(host.base) / "host.json").write_text(json.dumps(host.to_json(), indent=2))
                return
        except subprocess.TimeoutExpired:
            last = "ssh timed out"
        # Whatever now holds the port answers ssh or refuses it; sshd's log says which.
        if time.monotonic() > journal_checked + 2:
            if _sshd_port_taken(host):
                raise SshPortTaken(host.name, host.port)
            journal_checked = time.monotonic()
        time.sleep(0.25)
    raise TestHostError(
        f"{host.name}: not running|degraded after {timeout:.0f}s over ssh port {host.port} "
        f"(last answer: {last!r})\n--- console tail ---\n{host.console_tail()}"
    )


# Boots of one boot_hosts call, each with newly picked sshd ports, before it gives up.
PORT_ATTEMPTS = 3


def boot_hosts(
    count: int = 1,
    *,
    lower: str | os.PathLike[str] = "/",
    name_prefix: str = "gpuhost",
    install_doubles: bool = True,
    gpu_count: int = 8,
    double_config: dict[str, Any] | None = None,
    timeout: float = 120,
    nspawn_args: Sequence[str] = (),
    own_network: bool = False,
) -> list[TestHost]:
    """Boot `count` hosts in parallel; on any failure every host of this call is torn down.
    `own_network`: each in a network namespace of its own, its sshd still reached at
    127.0.0.1:port (a forwarder), so their services may use the same ports (a fleet).

    sshd binds its port inside the container, seconds after the port was picked here, and
    any process of this shared machine may bind it meanwhile (the container shares our
    network, and a port cannot be handed to an sshd in it already bound). Only that failure,
    seen in sshd's own log, boots the hosts again on newly picked ports; any other is raised.
    """
    lower_path = Path(lower).resolve()
    _check_prerequisites(lower_path)
    taken: set[int] = set()
    for attempt in range(1, PORT_ATTEMPTS + 1):
        try:
            return _boot_hosts_once(
                count,
                lower_path,
                name_prefix,
                install_doubles,
                gpu_count,
                double_config,
                timeout,
                nspawn_args,
                avoid=taken,
                own_network=own_network,
            )
        except SshPortTaken as exc:
            if attempt == PORT_ATTEMPTS:
                raise TestHostError(f"sshd's port was taken {attempt} times: {exc}") from exc
            taken.add(exc.port)
    raise AssertionError("unreachable")


def _boot_hosts_once(
    count: int,
    lower_path: Path,
    name_prefix: str,
    install_doubles: bool,
    gpu_count: int,
    double_config: dict[str, Any] | None,
    timeout: float,
    nspawn_args: Sequence[str],
    avoid: Iterable[int],
    own_network: bool = False,
) -> list[TestHost]:
    prepared: list[_Prepared] = []
    try:
        with _PORT_LOCK, _machine_lock():
            ports = pick_free_ports(count, avoid=avoid)
            suffix = os.urandom(2).hex()
            for i, port in enumerate(ports):
                name = f"{name_prefix}{i + 1}-{suffix}" if count > 1 else f"{name_prefix}-{suffix}"
                prepared.append(
                    _prepare(
                        name,
                        port,
                        lower_path,
                        install_doubles,
                        gpu_count,
                        double_config,
                        nspawn_args,
                        own_network,
                    )
                )
        started = time.monotonic()
        for prep in prepared:
            _launch(prep)
        with ThreadPoolExecutor(max_workers=count) as pool:
            futures = [pool.submit(_wait_running, p.host, started, timeout) for p in prepared]
            for fut in futures:
                fut.result()
    except BaseException:
        for prep in prepared:
            with contextlib.suppress(Exception):
                if prep.host.nspawn_pid:
                    prep.host.stop()
                else:
                    _unmount_and_remove(Path(prep.host.base))
        raise
    return [p.host for p in prepared]


def boot_host(**kwargs: Any) -> TestHost:
    """Boot one host (see boot_hosts)."""
    return boot_hosts(1, **kwargs)[0]


# --------------------------------------------------------------------------------------
# leftovers from crashed runs


@dataclass
class Leftover:
    base: str
    owner: str
    mounts: list[str]
    pids: list[int]


def _nspawn_pids_for(base: str) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = _cmdline(int(entry))
        if (
            argv
            and os.path.basename(argv[0]) == "systemd-nspawn"
            and f"--directory={base}/root" in argv
        ):
            pids.append(int(entry))
    return pids


def _state_bases() -> set[str]:
    try:
        return {h["base"] for h in json.loads(STATE_FILE.read_text())["hosts"]}
    except (OSError, ValueError, KeyError, TypeError):
        return set()


def find_leftovers(*, owner_pid: int | None = None, include_live: bool = False) -> list[Leftover]:
    """Test-host dirs with their mounts and nspawn processes.

    owner_pid: only those created by that process. Otherwise only stale ones: the owner
    process is gone and the host is not a detached CLI host in the state file, unless
    include_live.
    """
    found: list[Leftover] = []
    managed = _state_bases()
    bases = {str(p) for p in BASE_PARENT.glob(BASE_PREFIX + "*") if p.is_dir()}
    bases |= {
        str(Path(mp).parent)
        for mp in _mountpoints_under(str(BASE_PARENT))
        if Path(mp).name in ("root", "up") and Path(mp).parent.name.startswith(BASE_PREFIX)
    }
    for base in sorted(bases):
        try:
            owner = (Path(base) / "owner").read_text().strip()
        except OSError:
            owner = "unknown"
        if owner_pid is not None:
            if owner != str(owner_pid):
                continue
        elif not include_live:
            if owner == "detached" and base in managed:
                continue
            if owner.isdigit() and int(owner) != os.getpid() and _pid_alive(int(owner)):
                continue
            if owner.isdigit() and int(owner) == os.getpid():
                with _LIVE_LOCK:
                    if base in _LIVE:
                        continue
        mounts = _mountpoints_under(base)
        pids = _nspawn_pids_for(base)
        found.append(Leftover(base=base, owner=owner, mounts=mounts, pids=pids))
    return found


def reap_leftovers(*, include_live: bool = False) -> list[Leftover]:
    """Stop, unmount and remove stale test hosts (crashed runs); returns what it cleaned."""
    cleaned = find_leftovers(include_live=include_live)
    for left in cleaned:
        for pid in left.pids:
            _stop_processes(pid, 0, 15)
        _unmount_and_remove(Path(left.base))
    return cleaned
