"""Measure which `%` specifiers a systemd version resolves, with its own systemd-analyze.

For every letter and digit X it writes a unit with `ExecStart=/bin/echo a%Xb` and runs
`systemd-analyze verify`: "Invalid slot" means unknown (the unit fails to load), "is
deprecated" means deprecated, silence means known. Merges the result into
linting/execline/specifier_tables.json.

  python tools/gen_specifier_tables.py --local                      # this machine (252)
  python tools/gen_specifier_tables.py --chroot /var/tmp/specadmin-trixie          # 257
  python tools/gen_specifier_tables.py --chroot /var/tmp/specadmin-trixie \\
      --binary /tmp/s255/systemd-analyze --ld-library-path /tmp/s255               # 255

(255: Ubuntu noble's systemd 255.4 binaries copied into the chroot's /tmp/s255, see
tools/gen_systemd_catalog.py.) Never boots systemd; `verify` loads units offline.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import string
import subprocess
import tempfile
from pathlib import Path

LETTERS = string.ascii_letters + string.digits


def probe(letter: str, root: Path | None, binary: str, ld_path: str | None) -> str:
    base = root / "tmp" if root else Path("/var/tmp")
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        unit = Path(tmp) / "probe.service"
        unit.write_text(f"[Unit]\nDescription=p\n[Service]\nExecStart=/bin/echo a%{letter}b\n")
        inner = "/" + str(unit.relative_to(root)) if root else str(unit)
        env = dict(os.environ, SYSTEMD_LOG_LEVEL="info")
        if ld_path:
            env["LD_LIBRARY_PATH"] = ld_path
        argv = [binary, "verify", inner]
        if root:
            argv = ["chroot", str(root), *argv]
        out = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
        text = out.stdout + out.stderr
    if "Invalid slot" in text:  # other failures (e.g. no os-release in a chroot) are known letters
        return "unknown"
    if re.search(r"Specifier '%.' used in unit configuration, which is deprecated", text):
        return "deprecated"
    return "known"


def version_of(root: Path | None, binary: str, ld_path: str | None) -> int:
    env = dict(os.environ, LD_LIBRARY_PATH=ld_path) if ld_path else None
    argv = [binary, "--version"] if not root else ["chroot", str(root), binary, "--version"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    return int(re.match(r"systemd (\d+)", out).group(1))  # type: ignore[union-attr]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--local", action="store_true")
    where.add_argument("--chroot", type=Path)
    parser.add_argument("--binary", default="systemd-analyze")
    parser.add_argument("--ld-library-path")
    args = parser.parse_args()
    root = None if args.local else args.chroot
    version = version_of(root, args.binary, args.ld_library_path)
    result = {"known": "", "deprecated": ""}
    for letter in LETTERS:
        kind = probe(letter, root, args.binary, args.ld_library_path)
        if kind != "unknown":
            result["known"] += letter
        if kind == "deprecated":
            result["deprecated"] += letter
    table_path = Path(__file__).resolve().parents[1] / "linting/execline/specifier_tables.json"
    tables = json.loads(table_path.read_text(encoding="utf-8"))
    tables[str(version)] = result
    table_path.write_text(json.dumps(tables, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(json.dumps({str(version): result}, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
