#!/usr/bin/env python3
"""Generate linting/systemd/catalogs/systemd-<N>.json: every unit-file section, key and parser.

Why generated: which keys exist (and which C function parses each) changes with every
systemd release; typing them by hand drifts.  Two independent facts are combined and
cross-checked for each version:

1. ``src/core/load-fragment-gperf.gperf.in`` of that release (committed under
   ``tools/systemd-sources/``): maps ``Section.Key`` to its ``config_parse_*`` function.
   It is a Jinja template; the EXEC/CGROUP/KILL context macros are expanded per unit type
   exactly as the template does.  ``[Install]`` rows have a NULL parser there (PID 1
   ignores them); their real parsers come from the ``{ "Install", ... }`` table of
   ``src/shared/install.c`` (``install-items-v<N>.txt``).
2. ``systemd --dump-configuration-items`` of a real binary of that release
   (``dump-configuration-items-<N>.txt``): the keys the binary knows, with a value type.
   It hides legacy keys (``config_parse_warn_compat`` + ``DISABLED_LEGACY``, see
   ``unit_dump_config_items()`` in src/core/load-fragment.c); those are kept in the
   catalog (systemd accepts and ignores them, logging a warning) and listed separately.

Capturing the dumps (optional; committed copies make the generator run offline):

* 252 — this machine (Debian 12): ``--capture-local``; runs
  ``/lib/systemd/systemd --dump-configuration-items``, which only prints and exits (never
  run it without that flag: it would try to boot).
* 257 — a Debian 13 tree::

      apt-get install -y debootstrap
      debootstrap --variant=minbase --include=systemd,openssh-server,dbus \\
          trixie /var/tmp/specadmin-trixie
      tools/gen_systemd_catalog.py --debootstrap /var/tmp/specadmin-trixie

  (runs ``chroot DIR /lib/systemd/systemd --dump-configuration-items``).
* 255 — Ubuntu 24.04's systemd 255.4 binary (``apt-get download systemd
  libsystemd-shared libkmod2 libgcrypt20 libgpg-error0`` from noble, unpacked with
  ``dpkg-deb -x``), copied to DIR/tmp/s255 of the trixie tree and run there::

      tools/gen_systemd_catalog.py --debootstrap /var/tmp/specadmin-trixie \\
          --binary /tmp/s255/systemd --ld-library-path /tmp/s255

Then ``tools/gen_systemd_catalog.py`` (no options) rewrites the JSON catalogs and prints
the gperf-vs-dump cross-check.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = ROOT / "tools" / "systemd-sources"
CATALOGS = ROOT / "linting" / "systemd" / "catalogs"
VERSIONS = (252, 255, 257)

# Build switches used in the gperf template.  Debian and Ubuntu build with all of them
# (see `systemd --version`: +PAM +SELINUX +APPARMOR +SMACK +SECCOMP); they only change the
# parser of a few keys (to config_parse_warn_compat), never whether the key exists.
BUILD_FLAGS = {
    "HAVE_SECCOMP": True,
    "HAVE_PAM": True,
    "HAVE_SELINUX": True,
    "HAVE_APPARMOR": True,
    "ENABLE_SMACK": True,
}

_COMMENT = re.compile(r"\{#.*?#\}", re.S)
_MACRO_START = re.compile(r"^\{%-?\s*macro\s+(\w+)\((\w+)\)\s*-?%\}$")
_MACRO_END = re.compile(r"^\{%-?\s*endmacro\s*-?%\}$")
_IF = re.compile(r"^\{%-?\s*if\s+(not\s+)?(\w+)\s*-?%\}$")
_ELSE = re.compile(r"^\{%-?\s*else\s*-?%\}$")
_ENDIF = re.compile(r"^\{%-?\s*endif\s*-?%\}$")
_CALL = re.compile(r"^\{\{\s*(\w+)\(\s*'(\w+)'\s*\)\s*\}\}$")
_ITEM = re.compile(r"^(\w+)\.(\w+),\s*(\w+)\s*,\s*([^,]+),")
_INSTALL_ITEM = re.compile(r'\{\s*"Install",\s*"(\w+)",\s*(\w+),')


def _apply_conditionals(lines: list[str], flags: dict[str, bool]) -> list[str]:
    """Evaluate ``{% if FLAG %} / {% else %} / {% endif %}`` (the only forms used)."""
    out: list[str] = []
    stack: list[bool] = []  # whether the current branch is active
    for line in lines:
        stripped = line.strip()
        if m := _IF.match(stripped):
            value = flags[m.group(2)]
            stack.append(not value if m.group(1) else value)
        elif _ELSE.match(stripped):
            stack[-1] = not stack[-1]
        elif _ENDIF.match(stripped):
            stack.pop()
        elif all(stack):
            out.append(line)
    if stack:
        raise ValueError("unbalanced {% if %} in gperf template")
    return out


def expand_gperf_template(text: str, flags: dict[str, bool] | None = None) -> list[str]:
    """Render the Jinja subset used by load-fragment-gperf.gperf.in into gperf lines.

    Macros are collected first, the body after ``%%`` is rendered with each
    ``{{ MACRO('Type') }}`` call replaced by the macro body with ``{{type}}`` substituted;
    ``{% if %}`` inside macros is evaluated on expansion, like Jinja does.
    """
    flags = BUILD_FLAGS if flags is None else flags
    text = _COMMENT.sub("", text)
    macros: dict[str, tuple[str, list[str]]] = {}
    body: list[str] = []
    current: tuple[str, str, list[str]] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if m := _MACRO_START.match(stripped):
            current = (m.group(1), m.group(2), [])
            continue
        if _MACRO_END.match(stripped):
            if current is None:
                raise ValueError("endmacro without macro")
            macros[current[0]] = (current[1], current[2])
            current = None
            continue
        (current[2] if current else body).append(line)

    rendered: list[str] = []
    for line in _apply_conditionals(body, flags):
        if m := _CALL.match(line.strip()):
            param, macro_lines = macros[m.group(1)]
            for macro_line in _apply_conditionals(macro_lines, flags):
                rendered.append(macro_line.replace("{{" + param + "}}", m.group(2)))
        else:
            if "{{" in line or "{%" in line:
                raise ValueError(f"unsupported template construct: {line!r}")
            rendered.append(line)
    return rendered


def parse_gperf(text: str, flags: dict[str, bool] | None = None) -> dict[str, dict[str, dict]]:
    """Return ``{section: {key: {"parser": fn, "ltype": str}}}`` from the gperf template."""
    lines = expand_gperf_template(text, flags)
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "%%")
    except StopIteration as exc:
        raise ValueError("no %% separator in gperf file") from exc
    sections: dict[str, dict[str, dict]] = {}
    for line in lines[start + 1 :]:
        if not line.strip():
            continue
        m = _ITEM.match(line.strip())
        if not m:
            raise ValueError(f"unparsed gperf line: {line!r}")
        section, key, parser, ltype = m.groups()
        entry = sections.setdefault(section, {})
        if key in entry:
            raise ValueError(f"duplicate gperf key {section}.{key}")
        entry[key] = {"parser": parser, "ltype": ltype.strip()}
    return sections


def parse_install_items(text: str) -> dict[str, str]:
    """``{key: parser}`` from the copied ``{ "Install", "Key", parser, ... }`` rows."""
    return {m.group(1): m.group(2) for m in _INSTALL_ITEM.finditer(text)}


def parse_dump(text: str) -> dict[str, dict[str, str]]:
    """Parse ``--dump-configuration-items`` output into ``{section: {key: type}}``.

    A section header may repeat (the dump walks gperf's table in order); keys merge.
    Lines starting with ``#`` are provenance comments added when the dump was saved.
    """
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        if current is None or "=" not in line:
            raise ValueError(f"unexpected dump line: {raw!r}")
        key, _, value_type = line.partition("=")
        current[key] = value_type
    return sections


def crosscheck(
    gperf: dict[str, dict[str, dict]], dump: dict[str, dict[str, str]]
) -> dict[str, list[str]]:
    """Keys present on one side only (legacy keys the dump hides on purpose excluded)."""
    visible = {
        f"{section}.{key}"
        for section, keys in gperf.items()
        for key, item in keys.items()
        if not (item["parser"] == "config_parse_warn_compat" and item["ltype"] == "DISABLED_LEGACY")
    }
    dumped = {f"{section}.{key}" for section, keys in dump.items() for key in keys}
    return {
        "only_in_gperf": sorted(visible - dumped),
        "only_in_dump": sorted(dumped - visible),
    }


def build_catalog(version: int) -> dict:
    """Combine gperf + install.c + dump of one version into the catalog JSON object."""
    gperf_path = SOURCES / f"load-fragment-gperf-v{version}.gperf.in"
    install_path = SOURCES / f"install-items-v{version}.txt"
    dump_path = SOURCES / f"dump-configuration-items-{version}.txt"
    gperf = parse_gperf(gperf_path.read_text())
    install = parse_install_items(install_path.read_text())
    dump = parse_dump(dump_path.read_text())

    sections: dict[str, dict[str, str]] = {}
    removed: dict[str, list[str]] = {}
    for section, keys in gperf.items():
        for key, item in keys.items():
            parser = item["parser"]
            if section == "Install":
                if parser != "NULL" or key not in install:
                    raise ValueError(f"Install.{key}: not in install.c table")
                parser = install[key]
            sections.setdefault(section, {})[key] = parser
            if item["parser"] == "config_parse_warn_compat" and item["ltype"] == "DISABLED_LEGACY":
                removed.setdefault(section, []).append(key)
    missing_install = set(install) - set(gperf.get("Install", {}))
    if missing_install:
        raise ValueError(f"install.c keys missing from gperf: {sorted(missing_install)}")

    header = _provenance(gperf_path)
    return {
        "systemd_version": version,
        "source": (
            f"sections: src/core/load-fragment-gperf.gperf.in ({header}), [Install] parsers "
            "from src/shared/install.c; types: `systemd --dump-configuration-items` of a "
            f"real {version} binary (tools/systemd-sources/{dump_path.name}); "
            "generated by tools/gen_systemd_catalog.py"
        ),
        "sections": {s: dict(sorted(k.items())) for s, k in sections.items()},
        "types": {s: dict(sorted(k.items())) for s, k in dump.items()},
        "removed_ignored": {s: sorted(k) for s, k in removed.items()},
        "crosscheck": crosscheck(gperf, dump),
    }


def _provenance(gperf_path: Path) -> str:
    m = re.search(r"Origin: (.*)", gperf_path.read_text())
    return m.group(1).strip() if m else gperf_path.name


def capture_dump(argv_prefix: list[str], binary: str, ld_library_path: str | None) -> Path:
    """Run ``BINARY --dump-configuration-items`` (optionally in a chroot) and save it."""
    env_prefix = ["env", f"LD_LIBRARY_PATH={ld_library_path}"] if ld_library_path else []
    version_out = subprocess.run(
        [*argv_prefix, *env_prefix, binary, "--version"], check=True, capture_output=True, text=True
    ).stdout
    m = re.match(r"systemd (\d+) \(([^)]*)\)", version_out)
    if not m:
        raise SystemExit(f"cannot read the systemd version from: {version_out!r}")
    version = int(m.group(1))
    dump = subprocess.run(
        [*argv_prefix, *env_prefix, binary, "--dump-configuration-items"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    command = " ".join([*argv_prefix, *env_prefix, binary, "--dump-configuration-items"])
    path = SOURCES / f"dump-configuration-items-{version}.txt"
    path.write_text(
        f"# specadmin: output of `{command}`\n# systemd {version} ({m.group(2)})\n" + dump
    )
    print(f"captured systemd {version} ({m.group(2)}) -> {path.relative_to(ROOT)}")
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--capture-local",
        action="store_true",
        help="save `/lib/systemd/systemd --dump-configuration-items` of this machine",
    )
    parser.add_argument(
        "--debootstrap",
        metavar="DIR",
        help="save the dump of the systemd inside a debootstrap tree, e.g. one made by "
        "`debootstrap --variant=minbase --include=systemd,openssh-server,dbus trixie DIR` "
        "(run as `chroot DIR BINARY --dump-configuration-items`)",
    )
    parser.add_argument("--binary", default="/lib/systemd/systemd", help="systemd binary path")
    parser.add_argument("--ld-library-path", help="LD_LIBRARY_PATH for --binary (inside DIR)")
    parser.add_argument(
        "--versions", type=int, nargs="*", default=list(VERSIONS), help="catalogs to write"
    )
    args = parser.parse_args(argv)

    if args.capture_local:
        capture_dump([], args.binary, args.ld_library_path)
    if args.debootstrap:
        capture_dump(["chroot", args.debootstrap], args.binary, args.ld_library_path)

    CATALOGS.mkdir(parents=True, exist_ok=True)
    for version in args.versions:
        catalog = build_catalog(version)
        out = CATALOGS / f"systemd-{version}.json"
        out.write_text(json.dumps(catalog, indent=1, sort_keys=False) + "\n")
        n_keys = sum(len(k) for k in catalog["sections"].values())
        check = catalog["crosscheck"]
        print(
            f"systemd {version}: {len(catalog['sections'])} sections, {n_keys} keys -> "
            f"{out.relative_to(ROOT)}; gperf-only {check['only_in_gperf']}, "
            f"dump-only {check['only_in_dump']}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
