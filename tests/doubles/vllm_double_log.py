"""TEST DOUBLE for `vllm serve`: log lines and traceback tails formatted like vLLM's."""

from __future__ import annotations

import sys
import time

# --------------------------------------------------------------------------------------
# logging like vLLM (journald captures stdout/stderr)


def log(level: str, where: str, message: str) -> None:
    stamp = time.strftime("%m-%d %H:%M:%S")
    stream = sys.stderr if level in ("ERROR", "WARNING") else sys.stdout
    stream.write(f"{level} {stamp} [{where}] {message}\n")
    stream.flush()


def fail(lines: str) -> int:
    """A traceback-like tail on stderr, as an uncaught exception in vLLM would print."""
    sys.stderr.write("Traceback (most recent call last):\n")
    sys.stderr.write('  File "/usr/local/bin/vllm", line 8, in <module>\n')
    sys.stderr.write("    sys.exit(main())\n")
    sys.stderr.write(lines.rstrip("\n") + "\n")
    sys.stderr.flush()
    return 1
