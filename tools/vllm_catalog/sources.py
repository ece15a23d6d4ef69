"""Where the vLLM sources come from: released wheels and sdists, read without installing."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


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
    """A source distribution read like a wheel: `namelist()` and `read()` of the
    `vllm/...` paths (the sdist's top directory `vllm-X.Y.Z/` removed)."""

    def __init__(self, tar: tarfile.TarFile) -> None:
        self.tar = tar
        self.members: dict[str, tarfile.TarInfo] = {}
        for member in self.tar.getmembers():
            _, _, inner = member.name.partition("/")
            if member.isfile() and inner.startswith("vllm/"):
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
