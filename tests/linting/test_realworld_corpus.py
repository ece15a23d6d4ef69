"""Real-world-style repositories (vLLM, SGLang, llama.cpp units as people write them), each
linted as one run the way a new user would: exactly the findings in realworld/EXPECTED,
no more (false positives) and no fewer (misses)."""

from __future__ import annotations

import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from linting.cli import run

CORPUS = Path(__file__).parent / "realworld"
REPOS = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())


def lint_repo(repo: Path) -> tuple[list[str], dict]:
    """`path:line CODE` of every finding (paths relative to the corpus), and the report."""
    config = repo / "pyproject.toml"
    argv = [
        "--format",
        "json",
        str(repo),
        "--config",
        str(config) if config.is_file() else os.devnull,
    ]
    out, err = io.StringIO(), io.StringIO()
    code = run(argv, out, err)
    assert code in (0, 1), err.getvalue()
    report = json.loads(out.getvalue())
    found = [
        f"{Path(f.get('path', fr['path'])).relative_to(CORPUS)}:{f['line']} {f['code']}"
        for fr in report["files"]
        for f in fr["findings"]
    ]
    return found, report


def expected(repo: str) -> list[str]:
    lines = []
    for raw in (CORPUS / "EXPECTED").read_text(encoding="utf-8").splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry and entry.startswith(f"{repo}/"):
            lines.append(" ".join(entry.split()))
    return lines


@pytest.mark.parametrize("repo", REPOS)
def test_realworld_repository_gets_exactly_the_expected_findings(repo: str) -> None:
    found, _ = lint_repo(CORPUS / repo)
    assert Counter(found) == Counter(expected(repo))


def test_every_expected_finding_names_a_corpus_file() -> None:
    for raw in (CORPUS / "EXPECTED").read_text(encoding="utf-8").splitlines():
        entry = raw.split("#", 1)[0].strip()
        if entry:
            path = entry.split(":", 1)[0]
            assert (CORPUS / path).is_file(), entry


def test_every_corpus_file_modelled_on_a_public_unit_names_its_source() -> None:
    """PROVENANCE: `CORPUS_PATH REPOSITORY PATH COMMIT HOW` per line; every file of a
    `gh-*` repository has one, and every line names a file that is there."""
    named: set[str] = set()
    for raw in (CORPUS / "PROVENANCE").read_text(encoding="utf-8").splitlines():
        if not raw.strip() or raw.startswith("#"):
            continue
        corpus_path, repository, path, commit, how = raw.split()
        assert (CORPUS / corpus_path).is_file(), raw
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", repository) and path, raw
        assert re.fullmatch(r"[0-9a-f]{40}", commit) and how == "modelled", raw
        named.add(corpus_path)
    public = {
        str(p.relative_to(CORPUS))
        for p in CORPUS.glob("gh-*/**/*")
        if p.is_file() and p.name != "pyproject.toml"
    }
    assert public <= named, sorted(public - named)


# Units that name vLLM but that systemd refuses to load: no command of theirs runs.
NOT_LOADED = {"templates-misc/vllm-relative.service": "ExecStart=venv/bin/vllm (SD106)"}
_RUNS_VLLM = re.compile(r"vllm serve|vllm\.entrypoints|vllm/vllm-openai")


@pytest.mark.parametrize("repo", REPOS)
def test_every_corpus_unit_that_runs_vllm_has_its_vllm_command_found(repo: str) -> None:
    _, report = lint_repo(CORPUS / repo)
    for file_report in report["files"]:
        path = Path(file_report["path"])
        name = str(path.relative_to(CORPUS))
        if _RUNS_VLLM.search(path.read_text(encoding="utf-8")) and name not in NOT_LOADED:
            assert file_report["vllm"], f"{name}: no vLLM command found"
