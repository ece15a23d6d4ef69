"""A persistent cache of ShellCheck results, shared by runs on one machine.

ShellCheck costs a few milliseconds per script and CI lints the same units over and over;
results depend only on the script, dialect, exported names, excluded codes and the
ShellCheck binary (all in the key), so they can be kept on disk. One small JSON file per
key, written atomically (temp file + rename), so concurrent runs never read half a file.

`LINTUNITS_CACHE_DIR` chooses the directory (default `$XDG_CACHE_HOME/lintunits` or
`~/.cache/lintunits`); `LINTUNITS_CACHE_DIR=off` disables it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def cache_dir() -> Path | None:
    configured = os.environ.get("LINTUNITS_CACHE_DIR")
    if configured is not None:
        return None if configured.strip().lower() in ("", "off", "0", "false") else Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lintunits"


def _path(root: Path, key: str) -> Path:
    return root / "shellcheck" / key[:2] / f"{key}.json"


def load(key: str) -> list | None:
    root = cache_dir()
    if root is None:
        return None
    try:
        data = json.loads(_path(root, key).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, list) else None


def store(entries: dict[str, list]) -> None:
    """Best effort: a read-only or full disk only costs the speed-up."""
    root = cache_dir()
    if root is None:
        return
    for key, value in entries.items():
        path = _path(root, key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(value, fh)
            os.replace(tmp, path)
        except OSError:
            return
