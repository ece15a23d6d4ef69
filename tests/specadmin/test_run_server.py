"""What `make run` starts (scripts/run-server.sh): the web server and a worker cluster,
serving pages and static files, and both gone after SIGTERM."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


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
    return stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"


def test_run_server_serves_pages_and_stops_cleanly(tmp_path: Path) -> None:
    env = dict(
        os.environ,
        DATABASE_URL=f"sqlite:///{tmp_path}/run.sqlite3",
        SPECADMIN_VAR_DIR=str(tmp_path),
    )
    env.pop("REDIS_URL", None)
    python = str(Path(sys.executable))
    for command in (["migrate", "--noinput", "-v0"], ["loaddemo"]):
        subprocess.run(
            [python, "manage.py", *command], cwd=ROOT, env=env, check=True, capture_output=True
        )
    port = free_port()
    server = subprocess.Popen(
        ["bash", "scripts/run-server.sh", "127.0.0.1", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    spawned: set[int] = set()
    try:
        deadline = time.monotonic() + 60
        base = f"http://127.0.0.1:{port}"
        while time.monotonic() < deadline:
            try:
                if get(f"{base}/accounts/login/") == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        else:
            raise AssertionError("the server did not answer within 60 s")
        spawned = children(server.pid)
        assert get(f"{base}/static/css/specadmin.css") == 200
        assert any(
            "qcluster" in Path(f"/proc/{p}/cmdline").read_text()
            for p in spawned
            if Path(f"/proc/{p}/cmdline").exists()
        )
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=40)
    deadline = time.monotonic() + 20
    while any(alive(p) for p in spawned) and time.monotonic() < deadline:
        time.sleep(0.2)
    left = [p for p in spawned if alive(p)]
    for pid in left:  # never leave them running, even when the check below fails
        os.kill(pid, signal.SIGKILL)
    assert not left, "processes left after SIGTERM"
