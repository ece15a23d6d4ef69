"""CLI: `python -m tests.testhost up|down|status|reap` for hosts that outlive the command.

`up` boots hosts, detaches them (nspawn runs in its own session) and records them in
/var/tmp/specadmin-testhost-state.json; `down` stops every host recorded there.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from .host import STATE_FILE, TestHost, TestHostError, _pid_alive, boot_hosts, detach
from .host import reap_leftovers as _reap


@contextmanager
def _locked_state() -> Iterator[dict[str, Any]]:
    """Read-modify-write of the state file under an flock (several shells may run `up`)."""
    lock = STATE_FILE.with_suffix(".lock")
    with open(lock, "a") as fd:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            state = json.loads(STATE_FILE.read_text())
        except (OSError, ValueError):
            state = {"hosts": []}
        yield state
        tmp = STATE_FILE.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2) + "\n")
        tmp.replace(STATE_FILE)


def _public(host: TestHost) -> dict[str, Any]:
    data = host.to_json()
    data["alive"] = _pid_alive(host.nspawn_pid)
    return data


def cmd_up(args: argparse.Namespace) -> int:
    try:
        hosts = boot_hosts(args.count, lower=args.lower, gpu_count=args.gpus, timeout=args.timeout)
    except TestHostError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    with _locked_state() as state:
        for host in hosts:
            detach(host)
            state["hosts"].append(host.to_json())
    for host in hosts:
        print(json.dumps(_public(host)))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    with _locked_state() as state:
        remaining = []
        for data in state["hosts"]:
            host = TestHost.from_json(data)
            if args.name and host.name not in args.name:
                remaining.append(data)
                continue
            try:
                host.stop()
                print(f"stopped {host.name} ({host.base})")
            except TestHostError as exc:
                print(f"error: {exc}", file=sys.stderr)
                remaining.append(data)
        state["hosts"] = remaining
    return 0 if not remaining or args.name else 1


def cmd_status(args: argparse.Namespace) -> int:
    try:
        hosts = json.loads(STATE_FILE.read_text())["hosts"]
    except (OSError, ValueError, KeyError):
        hosts = []
    for data in hosts:
        print(json.dumps(_public(TestHost.from_json(data))))
    return 0


def cmd_reap(args: argparse.Namespace) -> int:
    for left in _reap():
        print(f"reaped {left.base} (owner {left.owner}, pids {left.pids}, mounts {left.mounts})")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.testhost", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    up = sub.add_parser("up", help="boot hosts and leave them running")
    up.add_argument("--count", type=int, default=1)
    up.add_argument("--lower", default="/", help="root directory to overlay (default /)")
    up.add_argument("--gpus", type=int, default=8, help="GPU count of the nvidia-smi double")
    up.add_argument("--timeout", type=float, default=120)
    down = sub.add_parser("down", help="stop hosts recorded in the state file")
    down.add_argument("name", nargs="*", help="only these hosts (default: all)")
    sub.add_parser("status", help="list hosts recorded in the state file")
    sub.add_parser("reap", help="clean up hosts of crashed runs")
    args = parser.parse_args(argv)
    handlers = {"up": cmd_up, "down": cmd_down, "status": cmd_status, "reap": cmd_reap}
    return handlers[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
