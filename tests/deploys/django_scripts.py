"""Django scripts run against a real-worker setup's database, in one Python process per
environment that sets Django up once.

Why: the real-worker tests poll the database about once a second while workers run a job
(`tests.deploys.qcluster_support.python`); a fresh `python -c` with `django.setup()` costs
about 1.3 s of CPU each time, so every wait burned half a core on a 2-core machine, beside
the workers and test hosts it was waiting for. The process here runs each script with
its own globals and its own `sys.argv`, captures what it prints, and closes its database
connections after each one (no SQLite lock or PostgreSQL session outlives a script).
Scripts keep what a subprocess gave them: `django.setup()` again is a no-op, an
exception comes back with its traceback, and the last line printed is the answer.
"""

from __future__ import annotations

import atexit
import json
import select
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[2]

# The runner itself: requests on stdin, answers on the stdout it started with (fd 1 is
# then pointed at stderr, so a stray write from a library cannot break the protocol).
RUNNER = r"""
import contextlib, io, json, os, sys, traceback
answers = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)
import django
django.setup()
from django.db import connections
for line in sys.stdin:
    asked = json.loads(line)
    printed = io.StringIO()
    error = ""
    sys.argv = ["-c", *asked["argv"]]
    try:
        with contextlib.redirect_stdout(printed):
            exec(compile(asked["script"], "<script>", "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = f"SystemExit({exc.code!r})"
    except BaseException:
        error = traceback.format_exc()
    finally:
        connections.close_all()
    answers.write(json.dumps({"stdout": printed.getvalue(), "error": error}) + "\n")
    answers.flush()
"""


class ScriptRunner:
    """One long-lived Django process for one environment."""

    def __init__(self, env: dict[str, str]) -> None:
        self.log: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", RUNNER],
            cwd=ROOT,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
        )
        self.lock = threading.Lock()

    def run(self, script: str, args: tuple[str, ...], timeout: float) -> str:
        """What `script` printed; AssertionError with its traceback when it raised."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with self.lock:
            self.proc.stdin.write(json.dumps({"script": script, "argv": list(args)}) + "\n")
            self.proc.stdin.flush()
            deadline = time.monotonic() + timeout
            while True:
                left = deadline - time.monotonic()
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, left))
                if ready:
                    break
                if left <= 0:
                    self.stop()
                    raise AssertionError(f"a Django script ran over {timeout:g} s")
            line = self.proc.stdout.readline()
        if not line:
            raise AssertionError(f"the Django script runner died: {self.stderr_tail()}")
        answer: dict[str, Any] = json.loads(line)
        assert not answer["error"], answer["error"][-4000:]
        return str(answer["stdout"])

    def stderr_tail(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-4000:]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        for pipe in (self.proc.stdin, self.proc.stdout):
            if pipe is not None:
                pipe.close()
        self.log.close()


_RUNNERS: dict[tuple[tuple[str, str], ...], ScriptRunner] = {}
_RUNNERS_LOCK = threading.Lock()


def run_script(env: dict[str, str], script: str, *args: str, timeout: float = 120) -> str:
    """What `script` printed, run with `args` as its argv in the runner for `env`."""
    key = tuple(sorted(env.items()))
    with _RUNNERS_LOCK:
        runner = _RUNNERS.get(key)
        if runner is None or runner.proc.poll() is not None:
            runner = _RUNNERS[key] = ScriptRunner(env)
    return runner.run(script, args, timeout)


def stop_runners(database_url: str | None = None) -> None:
    """Stop the runners (those of one database: before a test drops it)."""
    with _RUNNERS_LOCK:
        keys = [k for k in _RUNNERS if database_url is None or ("DATABASE_URL", database_url) in k]
        runners = [_RUNNERS.pop(k) for k in keys]
    for runner in runners:
        runner.stop()


atexit.register(stop_runners)
