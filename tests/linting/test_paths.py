"""`path_simplify()` against the vectors of systemd's src/test/test-path-util.c
`TEST(path_simplify)` (v257), with both flag settings."""

from __future__ import annotations

import pytest

from linting.execline.paths import path_simplify

KEEP = True
FOO = "a" * (255 * 2 - 1)  # char foo[NAME_MAX * 2], filled with 'a' and terminated

VECTORS = [
    ("", "", False),
    ("aaa/bbb////ccc", "aaa/bbb/ccc", False),
    ("//aaa/.////ccc", "/aaa/ccc", False),
    ("///", "/", False),
    ("///", "/", KEEP),
    ("///.//", "/", False),
    ("///.//.///", "/", False),
    ("////.././///../.", "/", False),
    (".", ".", False),
    ("./", ".", False),
    ("./", "./", KEEP),
    (".///.//./.", ".", False),
    (".///.//././/", ".", False),
    ("//./aaa///.//./.bbb/..///c.//d.dd///..eeee/.", "/aaa/.bbb/../c./d.dd/..eeee", False),
    ("//./aaa///.//./.bbb/..///c.//d.dd///..eeee/..", "/aaa/.bbb/../c./d.dd/..eeee/..", False),
    (".//./aaa///.//./.bbb/..///c.//d.dd///..eeee/..", "aaa/.bbb/../c./d.dd/..eeee/..", False),
    ("..//./aaa///.//./.bbb/..///c.//d.dd///..eeee/..", "../aaa/.bbb/../c./d.dd/..eeee/..", False),
    ("abc///", "abc/", KEEP),
    ("/../abc", "/abc", KEEP),
    ("/../abc///", "/abc/", KEEP),
    ("/../abc///", "/abc", False),
    ("/../abc///..", "/abc/..", KEEP),
    ("/../abc///../", "/abc/../", KEEP),
    ("/../abc///../", "/abc/..", False),
    ("/../../abc", "/abc", KEEP),
    ("/../../abc///", "/abc/", KEEP),
    ("/../../abc///", "/abc", False),
    ("/../../abc///../..", "/abc/../..", KEEP),
    ("/../../abc///../../", "/abc/../../", KEEP),
    ("/../../abc///../../", "/abc/../..", False),
    ("/.././../abc", "/abc", KEEP),
    ("/.././../abc///", "/abc/", KEEP),
    ("/.././../abc///", "/abc", False),
    ("/.././../abc///../..", "/abc/../..", KEEP),
    ("/.././../abc///../../", "/abc/../../", KEEP),
    ("/.././../abc///../../", "/abc/../..", False),
    ("/./.././../abc", "/abc", KEEP),
    ("/./.././../abc///", "/abc/", KEEP),
    ("/./.././../abc///", "/abc", False),
    ("/./.././../abc///../..", "/abc/../..", KEEP),
    ("/./.././../abc///../../", "/abc/../../", KEEP),
    ("/./.././../abc///../../", "/abc/../..", False),
    ("/.../abc", "/.../abc", KEEP),
    ("/.../abc///", "/.../abc/", KEEP),
    ("/.../abc///", "/.../abc", False),
    ("/.../abc///...", "/.../abc/...", KEEP),
    ("/.../abc///.../", "/.../abc/.../", KEEP),
    ("/.../abc///.../", "/.../abc/...", False),
    (FOO, FOO, False),
    ("/" + FOO, "/" + FOO, False),
    (
        "a////.//././//./b///././/./c/////././//./" + FOO + "//.//////d/e/.//f/",
        "a/b/c/" + FOO + "//.//////d/e/.//f/",
        False,
    ),
]


@pytest.mark.parametrize(("given", "expected", "keep"), VECTORS)
def test_path_simplify_matches_systemds_own_vectors(given: str, expected: str, keep: bool) -> None:
    assert path_simplify(given, keep_trailing_slash=keep, version=257) == expected


def test_systemd_252_keeps_the_leading_dotdot_of_an_absolute_path() -> None:
    # measured on Debian 12 (tests/differential/test_exec_path.py)
    assert path_simplify("/./.././../usr/bin/true", version=252) == "/../../usr/bin/true"
    assert path_simplify("/../usr//bin/../bin/true", version=252) == "/../usr/bin/../bin/true"
