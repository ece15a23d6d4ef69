"""Build the argv dumper (argvdump.c) and parse what it writes.

Why a fixed path under /var/tmp: the same path must exist on this machine (so that
`systemd-analyze verify` finds an executable) and inside every test host (the 252 host is an
overlay of this machine's root; other roots get a copy written into their overlay).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

SOURCE = Path(__file__).with_name("argvdump.c")
DUMPER_DIR = Path("/var/tmp/specadmin-differential")
DUMPER = DUMPER_DIR / "argvdump"
OUT_DIR = "/run/argv"  # inside the host; one file per unit (see argvdump.c)


def build_dumper() -> Path:
    """Compile argvdump.c (statically if the C library allows) unless already current."""
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()
    stamp = DUMPER_DIR / "argvdump.sha256"
    if DUMPER.is_file() and stamp.is_file() and stamp.read_text().strip() == digest:
        return DUMPER
    gcc = shutil.which("gcc") or shutil.which("cc")
    if gcc is None:
        raise RuntimeError("no C compiler (apt-get install -y gcc libc6-dev)")
    DUMPER_DIR.mkdir(parents=True, exist_ok=True)
    tmp = DUMPER_DIR / "argvdump.tmp"
    base = [gcc, "-O2", "-Wall", "-o", str(tmp), str(SOURCE)]
    res = subprocess.run([*base, "-static"], capture_output=True, text=True)
    if res.returncode != 0:  # no libc.a: a dynamic binary works where the guest's glibc is newer
        subprocess.run(base, capture_output=True, text=True, check=True)
    tmp.chmod(0o755)
    tmp.replace(DUMPER)
    stamp.write_text(digest + "\n")
    return DUMPER


def install_into(root: Path) -> None:
    """Copy the dumper into a host's overlay root at the same path."""
    target = root / DUMPER.relative_to("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(DUMPER, target)
    target.chmod(0o755)


def parse_records(data: bytes) -> list[tuple[bytes, ...]]:
    """Split a dump file into one argv (tuple of bytes) per command that ran."""
    fields = data.split(b"\0")
    if fields and fields[-1] == b"":
        fields.pop()
    records: list[tuple[bytes, ...]] = []
    i = 0
    while i < len(fields):
        head = fields[i]
        if not head.startswith(b"ARGV "):
            raise ValueError(f"corrupt dump at field {i}: {head!r}")
        argc = int(head[5:])
        records.append(tuple(fields[i + 1 : i + 1 + argc]))
        i += 1 + argc
    return records
