"""What the official `vllm/vllm-openai` image runs: the ENTRYPOINT of the `vllm-openai`
stage of the release's docker/Dockerfile (measured in the sdists: `python3 -m
vllm.entrypoints.openai.api_server` up to 0.11.1, `vllm serve` from 0.11.2). The arguments
after the image name in `docker run` are appended to it."""

from __future__ import annotations

import json
import re
from typing import Any

_STAGE = re.compile(r"^FROM\s+\S+\s+AS\s+(\S+)\s*$", re.I)
_ENTRYPOINT = re.compile(r"^ENTRYPOINT\s+(\[.*\])\s*$", re.I)


def image_entrypoint(archive: Any) -> list[str] | None:
    """The entrypoint of the `vllm-openai` image, or None when the archive has no
    Dockerfile (wheels do not ship one)."""
    for name in ("docker/Dockerfile", "Dockerfile"):
        if name in archive.namelist():
            return _entrypoint(archive.read(name).decode("utf-8", "replace"))
    return None


def _entrypoint(dockerfile: str) -> list[str] | None:
    stage = None
    for line in dockerfile.splitlines():
        line = line.strip()
        match = _STAGE.match(line)
        if match:
            stage = match.group(1)
            continue
        match = _ENTRYPOINT.match(line)
        if match and stage == "vllm-openai":
            return [str(part) for part in json.loads(match.group(1))]
    return None
