#!/usr/bin/env python3
"""Generate docs/rules/: one page per rule (`<CODE>.md`) plus README.md, the index by family.

Why generated: the rule catalog (each rule's docstring) is the single source of the docs,
`--explain` and the SARIF help text; pages typed by hand would drift. CI runs `--check`,
which changes nothing and exits 1 when the committed pages differ from the catalog.

    tools/gen_rule_docs.py            # rewrite docs/rules/
    tools/gen_rule_docs.py --check    # CI: exit 1 if docs/rules/ is stale
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout without installing it
    sys.path.insert(0, str(ROOT))

from linting.rules.docs import GENERATED_MARKER, generate_docs  # noqa: E402
from linting.rules.registry import Rule, all_rules  # noqa: E402

DEFAULT_OUT = ROOT / "docs" / "rules"


def stale_files(out: Path, expected: dict[str, str]) -> list[str]:
    """Names of pages that are missing, differ, or were generated for a rule that is gone."""
    result = []
    for name, content in sorted(expected.items()):
        path = out / name
        if not path.is_file() or path.read_text(encoding="utf-8") != content:
            result.append(name)
    return result + [p.name for p in _orphans(out, expected)]


def write(out: Path, expected: dict[str, str]) -> list[str]:
    """Write what changed and remove generated pages of retired rules; returns the names."""
    changed = stale_files(out, expected)
    out.mkdir(parents=True, exist_ok=True)
    for orphan in _orphans(out, expected):
        orphan.unlink()
    for name in changed:
        if name in expected:
            (out / name).write_text(expected[name], encoding="utf-8")
    return changed


def _orphans(out: Path, expected: dict[str, str]) -> list[Path]:
    """Generated pages (they carry the marker) with no rule behind them; hand-written files
    in the folder are left alone."""
    if not out.is_dir():
        return []
    return sorted(
        p
        for p in out.glob("*.md")
        if p.name not in expected and GENERATED_MARKER in p.read_text(encoding="utf-8")
    )


def main(argv: Sequence[str] | None = None, rules: list[Rule] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the docs are stale")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="docs/rules by default")
    args = parser.parse_args(argv)
    expected = generate_docs(all_rules() if rules is None else rules)
    if args.check:
        stale = stale_files(args.out, expected)
        for name in stale:
            print(f"{_shown(args.out / name)}: out of date", file=sys.stderr)
        if stale:
            print("run tools/gen_rule_docs.py to regenerate", file=sys.stderr)
        return 1 if stale else 0
    for name in write(args.out, expected):
        verb = "wrote" if name in expected else "removed"
        print(f"{verb} {_shown(args.out / name)}")
    return 0


def _shown(path: Path) -> Path:
    """Paths inside the checkout are printed relative to it, as CI logs show them."""
    try:
        return path.resolve().relative_to(ROOT)
    except ValueError:
        return path


if __name__ == "__main__":
    sys.exit(main())
