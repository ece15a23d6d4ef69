"""What the probe says when it had no vLLM executable it may run: shared by the
probe, which writes it, and the host pages, which show it as a note, not a fault (a new
host has no approved unit yet)."""

from __future__ import annotations

NO_EXECUTABLE = (
    "vLLM version: no approved executable to run (none of the units pushed here names one, "
    "and no admin listed one on the host page); nothing was run"
)
