"""Where the vLLM sources come from: a release's sdist (7–47 MB) when PyPI has one, its
wheel (330–510 MB; 0.15.x have no sdist) otherwise, read without installing.

The sdist is found through PyPI's simple index (PEP 691 JSON, the API pip itself uses) and
its sha256 is checked against the index; wheels come from `pip download`. Both are kept in
a cache outside the repository (`$VLLM_WHEEL_CACHE` or /var/tmp/vllm-wheels; sdists may
also be in /var/tmp/vllm-sdists).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SIMPLE_INDEX = "https://pypi.org/simple/vllm/"
SDIST_CACHE = Path("/var/tmp/vllm-sdists")


def find_or_download_source(version: str, cache: Path) -> Path:
    """The cached sdist or wheel of `version`; downloads the sdist (or, when the index has
    none, the wheel) if neither is cached."""
    for directory in (cache, SDIST_CACHE):
        sdist = directory / f"vllm-{version}.tar.gz"
        if sdist.is_file():
            return sdist
    wheels = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if wheels:
        return wheels[0]
    files = index_files()
    name = f"vllm-{version}.tar.gz"
    if name in files:
        return download(files[name], cache / name)
    return find_or_download_wheel(version, cache)


def index_files() -> dict[str, dict]:
    """File name → the simple index's entry (url, hashes, yanked…) for every vLLM file."""
    request = urllib.request.Request(
        SIMPLE_INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        data = json.load(response)
    return {f["filename"]: f for f in data["files"]}


def download(entry: dict, target: Path) -> Path:
    """Fetch one file of the index and check its sha256 before keeping it."""
    target.parent.mkdir(parents=True, exist_ok=True)
    with urllib.request.urlopen(entry["url"], timeout=600) as response:
        data = response.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["hashes"]["sha256"]:
        raise SystemExit(f"{target.name}: sha256 {digest} does not match the index")
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, target)
    return target


def find_or_download_wheel(version: str, cache: Path) -> Path:
    """Return the cached wheel for `version`, downloading it with pip if needed."""
    cache.mkdir(parents=True, exist_ok=True)
    matches = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not matches:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--dest",
                str(cache),
                f"vllm=={version}",
            ],
            check=True,
        )
        matches = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not matches:
        raise SystemExit(f"no wheel for vllm=={version} in {cache}")
    return matches[0]


class SdistArchive:
    """A source distribution read like a wheel: `namelist()` and `read()` of its paths
    with the sdist's top directory `vllm-X.Y.Z/` removed (`vllm/…`, `docker/Dockerfile`)."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.members: dict[str, tarfile.TarInfo] = {}
        for member in self.tar.getmembers():
            _, _, inner = member.name.partition("/")
            if member.isfile() and inner:
                self.members[inner] = member

    def namelist(self) -> list[str]:
        return list(self.members)

    def read(self, name: str) -> bytes:
        handle = self.tar.extractfile(self.members[name])
        assert handle is not None
        return handle.read()


@contextmanager
def open_archive(path: Path) -> Iterator[SdistArchive | zipfile.ZipFile]:
    """A wheel (a zip file) or an sdist, both answering `namelist()` and `read()`."""
    if path.name.endswith(".tar.gz"):
        with tarfile.open(path) as tar:
            yield SdistArchive(tar)
    else:
        with zipfile.ZipFile(path) as wheel:
            yield wheel


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
