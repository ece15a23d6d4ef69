"""What `make run` starts (scripts/run-server.sh): gunicorn and a worker cluster, serving
pages and static files, one console line per request and per error, and a clean stop:
SIGTERM to the script, or Ctrl-C on the terminal of `make run`, ends everything with exit 0.
"""

from __future__ import annotations

import contextlib
import http.cookiejar
import os
import pty
import re
import select
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PYTHON = str(Path(sys.executable))
SETUP = """
import django
django.setup()
from django.contrib.auth.models import Group, User
from deploys.models import Host
viewer = User.objects.create_user("vic", password="vic-password-1")
viewer.groups.add(Group.objects.get(name="viewer"))
Host.objects.create(
    name="no-ssh-here", address="127.0.0.1", ssh_port=int({port}), key_file="{key}",
    host_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
    host_key_fingerprint="SHA256:test",
)
"""
ACCESS_LINE = re.compile(r'^127\.0\.0\.1 "(GET|POST) (\S+) HTTP/1\.1" (\d{3}) ', re.M)


# gunicorn's line once it has bound its socket (`make run PORT=0` binds any free port).
# Only against a hang: a server that ends, or one that answers, is seen at once.
HANG_S = 300
LISTENING = re.compile(r"Listening at: http://127\.0\.0\.1:(\d+) ")


def wait_listening(console: Callable[[], str], running: Callable[[], bool]) -> int:
    """The port the server listens on. It is started on port 0, so the kernel picks a free
    port as gunicorn binds it: a port chosen here first and bound seconds later could be
    taken meanwhile by any connection on this busy machine (gunicorn then retries and
    exits, and a wait for the page could only run out). Fails at once, with what the
    server printed, when it ends before listening."""
    deadline = time.monotonic() + HANG_S
    while True:
        text = console()
        if match := LISTENING.search(text):
            return int(match.group(1))
        if not running():
            raise AssertionError(f"the server ended before listening:\n{text[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"the server is still not listening:\n{text[-3000:]}")
        time.sleep(0.2)


def children(pid: int) -> set[int]:
    """Every descendant of `pid` (from /proc)."""
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        parent = frontier.pop()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            if ppid == parent and int(entry.name) not in found:
                found.add(int(entry.name))
                frontier.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    try:
        return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def reap(pids: set[int], timeout: float = 20) -> list[int]:
    """Wait for `pids` to end; kill (and return) those still alive after `timeout`."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in pids if alive(p)]
    for pid in left:  # never leave them running, even when the check fails
        os.kill(pid, signal.SIGKILL)
    return left


class Browser:
    """A logged-in HTTP client (cookies + CSRF), stdlib only."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def request(self, path: str, data: dict[str, str] | None = None) -> int:
        body = None
        if data is not None:
            token = next(c.value for c in self.jar if c.name == "csrftoken")
            body = urllib.parse.urlencode({**data, "csrfmiddlewaretoken": token}).encode()
        request = urllib.request.Request(self.base + path, data=body)
        request.add_header("Referer", self.base + path)
        try:
            with self.opener.open(request, timeout=15) as response:
                response.read()
                return response.status
        except urllib.error.HTTPError as exc:
            return exc.code

    def login(self, user: str, password: str) -> None:
        assert self.request("/accounts/login/") == 200
        self.request("/accounts/login/", {"username": user, "password": password})


def wait_for_page(url: str, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within {timeout:.0f} s")


@pytest.fixture
def site(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A migrated database with the demo data, as `make run` prepares it."""
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp_path}/run.sqlite3",
        SPECADMIN_VAR_DIR=str(tmp_path),
    )
    env.pop("REDIS_URL", None)
    for command in (["migrate", "--noinput", "-v0"], ["loaddemo"]):
        subprocess.run(
            [PYTHON, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True
        )
    yield env


@pytest.fixture
def closes_without_a_banner() -> Iterator[int]:
    """A port that accepts SSH connections and closes them at once (paramiko: "Error
    reading SSH protocol banner"), like a host behind a broken proxy."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            connection.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join(timeout=5)
    listener.close()


def probe_error(database: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with sqlite3.connect(database, timeout=20) as db:
            row = db.execute("SELECT probe_error FROM deploys_host").fetchone()
        if row and row[0]:
            return row[0]
        time.sleep(0.3)
    raise AssertionError("the worker did not record the probe within 60 s")


def test_run_server_serves_logs_one_line_per_request_and_error_and_stops_with_exit_0(
    site: dict[str, str], closes_without_a_banner: int, tmp_path: Path
) -> None:
    key = tmp_path / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key], check=True)
    subprocess.run(
        [PYTHON, "-c", SETUP.format(port=closes_without_a_banner, key=key)],
        cwd=ROOT,
        env={**site, "DJANGO_SETTINGS_MODULE": "specadmin.settings"},
        check=True,
        capture_output=True,
    )
    console = tmp_path / "console.txt"
    with console.open("wb") as out:
        server = subprocess.Popen(
            ["bash", "scripts/run-server.sh", "127.0.0.1", "0"],
            cwd=ROOT,
            env=site,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    spawned: set[int] = set()
    try:
        port = wait_listening(
            lambda: console.read_text(errors="replace"), lambda: server.poll() is None
        )
        base = f"http://127.0.0.1:{port}"
        wait_for_page(f"{base}/accounts/login/")
        spawned = children(server.pid)
        assert any(
            "qcluster" in Path(f"/proc/{p}/cmdline").read_text(errors="replace")
            for p in spawned
            if Path(f"/proc/{p}/cmdline").exists()
        )
        viewer = Browser(base)
        viewer.login("vic", "vic-password-1")
        assert viewer.request("/profiles/") == 200
        assert viewer.request("/static/css/specadmin.css") == 200
        assert viewer.request("/profiles/new/") == 403
        admin = Browser(base)
        admin.login("admin", "specadmin-demo")
        assert admin.request("/deploys/hosts/1/probe/", {}) == 200  # redirected to the host
        assert "banner" in probe_error(tmp_path / "run.sqlite3").lower()
    finally:
        server.send_signal(signal.SIGTERM)
        status = server.wait(timeout=40)
    left = reap(spawned)
    text = console.read_text(errors="replace")
    assert status == 0, text[-3000:]
    assert not left, "processes left after SIGTERM"
    assert "Traceback" not in text
    requests = ACCESS_LINE.findall(text)
    assert ("GET", "/profiles/new/", "403") in requests
    # One line per request: the 403 appears once (no warning, no traceback).
    assert text.count("/profiles/new/") == 1, text
    assert text.count("Error reading SSH protocol banner") == 0, text
    assert "Successful login" not in text  # a login is its requests' lines, nothing more


class Terminal:
    """The pseudo-terminal a child runs on, and everything it printed there."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.output = bytearray()
        self.started = time.monotonic()

    def drain(self, seconds: float) -> None:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.2)
            if ready:
                try:
                    self.output.extend(os.read(self.fd, 65536))
                except OSError:
                    return

    def text(self) -> str:
        return self.output.decode(errors="replace")


def start_make_run_on_a_terminal(env: dict[str, str]) -> tuple[int, Terminal]:
    """`make run` on a terminal of its own, as a person starts it (on any free port)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child
        os.chdir(ROOT)
        os.execvpe(
            "make",
            ["make", "--no-print-directory", "run", "PORT=0", f"PY={PYTHON}"],
            env,
        )
    return pid, Terminal(fd)


def wait_serving_on_terminal(pid: int, terminal: Terminal) -> None:
    """Until the login page answers; the terminal is drained meanwhile (a full terminal
    would block the server's writes)."""

    def console() -> str:
        terminal.drain(0.2)
        return terminal.text()

    port = wait_listening(console, lambda: os.waitpid(pid, os.WNOHANG) == (0, 0))
    url = f"http://127.0.0.1:{port}/accounts/login/"
    while True:
        terminal.drain(0.5)
        try:
            wait_for_page(url, timeout=0.5)
            return
        except AssertionError:
            if time.monotonic() > terminal.started + HANG_S:
                raise


def wait_exit_status(pid: int, terminal: Terminal, timeout: float = 40) -> int | None:
    """The child's exit code once it ended (the terminal drained meanwhile), else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        terminal.drain(0.5)
        done, raw = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(raw)
    return None


def test_ctrl_c_on_make_run_stops_everything_and_exits_0(site: dict[str, str]) -> None:
    pid, terminal = start_make_run_on_a_terminal(site)
    spawned: set[int] = set()
    status = None
    try:
        wait_serving_on_terminal(pid, terminal)
        spawned = children(pid)
        os.write(terminal.fd, b"\x03")  # Ctrl-C: the terminal signals its foreground group
        status = wait_exit_status(pid, terminal)
    finally:
        if status is None:  # (already reaped when it ended before listening)
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
        os.close(terminal.fd)
    left = reap(spawned)
    text = terminal.text()
    assert status == 0, text[-3000:]
    assert not left, "processes left after Ctrl-C"
    assert "make: ***" not in text
    assert "Traceback" not in text
