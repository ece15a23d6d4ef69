"""Every vLLM release has a catalog decision (linting/vllm/catalogs/decisions.json, written
by `tools/gen_vllm_catalog.py --all`), and a release without a catalog of its own is linted
with the nearest older one and a note, never refused.

The check against PyPI needs the network: offline (CI machines without access) it is
skipped with the reason, so a new release shows up on the first run that can see PyPI."""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest

from linting.vllm.catalog import (
    CATALOG_DIR,
    DECISIONS_FILE,
    UnknownVllmVersion,
    available_versions,
    choose_catalog,
    decisions,
)

SIMPLE_INDEX = "https://pypi.org/simple/vllm/"
RELEASE = re.compile(r"vllm-(\d+(?:\.\d+)+(?:\.post\d+)?)(?:\.tar\.gz|-.+\.whl)")


def key(version: str) -> tuple[int, ...]:
    return tuple(int(p.removeprefix("post")) for p in version.split("."))


def test_every_catalog_file_is_a_catalog_decision_and_back() -> None:
    own = {v for v, d in decisions().items() if d["decision"] == "catalog"}
    assert own == set(available_versions())
    for version, decision in decisions().items():
        if decision["decision"] == "same-as":
            assert decision["catalog"] in own and key(decision["catalog"]) < key(version)
        else:
            assert decision["decision"] in ("catalog", "no-catalog"), version
    assert json.loads(DECISIONS_FILE.read_text())["generated_by"] == "tools/gen_vllm_catalog.py"
    assert (CATALOG_DIR / "decisions.json") == DECISIONS_FILE


def test_an_identical_release_uses_its_twin_catalog_without_a_note() -> None:
    choice = choose_catalog("0.8.5.post1")
    assert choice.catalog.version == "0.8.5" and choice.note is None


def test_a_release_without_a_catalog_gets_the_nearest_older_one_and_a_note() -> None:
    choice = choose_catalog("0.16.5")
    assert choice.catalog.version == "0.16.0"
    assert (
        choice.note
        == "vLLM 0.16.5 has no catalog of its own; linted with 0.16.0's, the nearest older one"
    )
    newest = available_versions()[-1]
    future = choose_catalog("9.0.0")
    assert future.catalog.version == newest and "newer than every catalog" in (future.note or "")


def test_releases_the_generator_cannot_read_say_why_and_use_the_oldest_catalog() -> None:
    choice = choose_catalog("0.8.2")
    assert choice.catalog.version == available_versions()[0]
    assert choice.note and "cannot read" in choice.note and "the oldest one" in choice.note


def test_a_string_that_is_no_release_number_is_refused() -> None:
    with pytest.raises(UnknownVllmVersion, match="not a release number"):
        choose_catalog("latest")


def _index_releases() -> set[str]:
    request = urllib.request.Request(
        SIMPLE_INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            files = json.load(response)["files"]
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        pytest.skip(f"PyPI is not reachable from here ({exc}); the check runs where it is")
    found = set()
    for entry in files:
        match = RELEASE.fullmatch(entry["filename"])
        if match and not entry.get("yanked"):
            found.add(match.group(1))
    return found


def test_every_vllm_release_on_the_index_has_a_catalog_decision() -> None:
    oldest = json.loads(DECISIONS_FILE.read_text())["oldest"]
    on_index = {v for v in _index_releases() if key(v) >= key(oldest)}
    missing = sorted(on_index - set(decisions()), key=key)
    assert not missing, (
        f"vLLM {', '.join(missing)} on PyPI without a catalog decision: run "
        "`python tools/gen_vllm_catalog.py --all` and commit the new catalogs and decisions.json"
    )
