"""Paths as systemd normalises them (src/basic/path-util.c): `path_simplify()` drops
repeated slashes and `.` components but keeps `..` (measured on 252: `//usr/bin/./env`
runs `/usr/bin/env`, `/usr/bin/../bin/env` stays as written), `path_is_normalized()`
refuses `..` components, and from v257 `path_implies_directory()` refuses a path ending in
`/`, `/.` or `/..` as an executable (before only a trailing `/`)."""

from __future__ import annotations


def path_simplify(path: str) -> str:
    absolute = path.startswith("/")
    if absolute and "//" not in path and "/./" not in path and not path.endswith(("/", "/.")):
        return path  # no empty and no `.` component: already simple (most executables)
    parts = [p for p in path.split("/") if p not in ("", ".")]
    simplified = "/".join(parts)
    if absolute:
        return "/" + simplified
    return simplified or "."


def path_is_normalized(path: str) -> bool:
    return ".." not in path.split("/")


def implies_directory(path: str, version: int) -> bool:
    """Would `config_parse_exec()` of `version` refuse this executable as a directory?"""
    if version >= 257:
        return path in (".", "..") or path.endswith(("/", "/.", "/.."))
    return path.endswith("/")
