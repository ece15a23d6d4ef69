"""Paths as systemd normalises them (src/basic/path-util.c, v252…v257): `path_simplify()`
drops repeated slashes and `.` components, drops `..` components at the start of an
absolute path (`/../x` is `/x`: the root's parent is the root; not before
DROPS_LEADING_DOTDOT) but keeps any other `..` (measured on 252: `//usr/bin/./env` runs
`/usr/bin/env`, `/usr/bin/../bin/env` stays as written), and stops simplifying at a
component longer than NAME_MAX, leaving the rest as written (`path_find_first_component()`
refuses it); `path_is_normalized()` refuses `..` components, and from v257
`path_implies_directory()` refuses a path ending in `/`, `/.` or `/..` as an executable
(before only a trailing `/`). The vectors of src/test/test-path-util.c
`TEST(path_simplify)` at v257 are tests/linting/test_paths.py's."""

from __future__ import annotations

NAME_MAX = 255
# The first release whose path_simplify() drops leading `..` of an absolute path: 252 keeps
# them (measured by tests/differential/test_exec_path.py: `/../usr/bin/true` stays), 257
# drops them (src/basic/path-util.c and its test-path-util.c vectors at v257); 255 and 256
# were not measured.
DROPS_LEADING_DOTDOT = 256


def path_simplify(
    path: str, *, keep_trailing_slash: bool = False, version: int = DROPS_LEADING_DOTDOT
) -> str:
    """`path_simplify_full()` of systemd `version`; `keep_trailing_slash` is
    PATH_SIMPLIFY_KEEP_TRAILING_SLASH."""
    if not path:
        return path
    absolute = path.startswith("/")
    if (
        absolute
        and "//" not in path
        and "/." not in path
        and not path.endswith("/")
        and len(path) <= NAME_MAX
    ):
        return path  # no empty, `.` or `..` component and none too long (most executables)
    keep = keep_trailing_slash and path.endswith("/")
    out: list[str] = []
    beginning = True
    p = 1 if absolute else 0
    while True:
        found = _first_component(path, p)
        if found is None:
            break
        first, length, after = found
        if length < 0:  # too long: "refuse to simplify the remaining part"
            out.append(path[p:])
            return ("/" if absolute else "") + "/".join(out)
        component = path[first : first + length]
        p = after
        if absolute and beginning and component == ".." and version >= DROPS_LEADING_DOTDOT:
            continue  # at the beginning of an absolute path ".." can be skipped
        beginning = False
        out.append(component)
    result = ("/" if absolute else "") + "/".join(out)
    if not out and not absolute:
        result = "."
    if keep and not result.endswith("/"):
        result += "/"
    return result


def _skip_slash_or_dot(path: str, i: int) -> int:
    """`skip_slash_or_dot()`: past `/` characters and `./` pairs."""
    while i < len(path):
        if path[i] == "/":
            i += 1
        elif path.startswith("./", i):
            i += 2
        else:
            break
    return i


def _first_component(path: str, p: int) -> tuple[int, int, int] | None:
    """`path_find_first_component(&p, accept_dot_dot=true, …)`: (start, length, where p
    moves to) of the next component; length -1 for one longer than NAME_MAX (p is then not
    moved); None at the end."""
    first = _skip_slash_or_dot(path, p)
    if first >= len(path) or path[first:] == ".":
        return None
    end = path.find("/", first)
    end = len(path) if end < 0 else end
    if end - first > NAME_MAX:
        return first, -1, p
    after = _skip_slash_or_dot(path, end)
    if path[after:] == ".":
        after += 1
    return first, end - first, after


def path_is_normalized(path: str) -> bool:
    return ".." not in path.split("/")


def implies_directory(path: str, version: int) -> bool:
    """Would `config_parse_exec()` of `version` refuse this executable as a directory?"""
    if version >= 257:
        return path in (".", "..") or path.endswith(("/", "/.", "/.."))
    return path.endswith("/")
