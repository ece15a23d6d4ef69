"""The documentation stands on its own: nothing points outside the repository, and the
links of README.md and docs/ lead to files that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# Notes that live beside the repository on the machine it was first written on; a person
# who clones it does not have them.
OUTSIDE = re.compile(r"DESIGN\.md|STYLE\.md|TESTHOST\.md|\.\./shared\b|/work/shared")
# The project's tracker is not in the repository: code and docs cite docs/ and upstream
# sources, whose trackers are cited by name and number ("vllm #55510").
TRACKER = re.compile(r"\bissues? \d+", re.IGNORECASE)
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
THIS_FILE = Path(__file__).resolve()


def _repository_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [ROOT / name for name in listed.split("\0") if name and (ROOT / name).is_file()]


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def test_no_file_points_readers_to_notes_outside_the_repository() -> None:
    found = []
    for path in _repository_files():
        text = _text(path)
        if path.resolve() == THIS_FILE or text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_no_file_cites_the_projects_own_tracker() -> None:
    found = []
    for path in _repository_files():
        text = _text(path)
        if path.resolve() == THIS_FILE or text is None:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if TRACKER.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []


def test_links_in_the_readme_and_docs_lead_to_existing_files() -> None:
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" in target or target.startswith("mailto:"):
                continue
            if not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == []
