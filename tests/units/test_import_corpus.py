"""The import on every unit of the real-world corpus and the examples: each vLLM unit
becomes a profile whose rendered unit gives every Exec command the same argv and the
same environment (through the linter's Exec model); each one that is not imported is
named here with its reason (docs/unit-import.md has the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest

from units.importing.service import import_unit

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(
    [*(ROOT / "tests/linting/realworld").rglob("*.service"), *(ROOT / "examples").glob("*.service")]
)
# Units that do not start a vLLM server themselves, and why (not counted).
NOT_VLLM = {
    "docker-vllm/vllm-detached.service": "vLLM runs in a container (docker run)",
    "docker-vllm/vllm-docker.service": "vLLM runs in a container (docker run)",
    "docker-vllm/vllm-podman.service": "vLLM runs in a container (podman run)",
    "llamacpp/llama-server.service": "llama.cpp, not vLLM",
    "sglang/sglang.service": "SGLang, not vLLM",
    "ray-cluster/ray-head.service": "a Ray node",
    "ray-cluster/ray-worker.service": "a Ray node",
    "wrapper/vllm-wrapper.service": "a wrapper script starts vLLM",
}
# vLLM units a profile cannot describe, and why.
REFUSED: dict[str, str] = {
    # systemd refuses `venv/bin/vllm` (neither a plain name nor an absolute path): the
    # unit has no ExecStart= command at all, so there is nothing to run the same.
    "templates-misc/vllm-relative.service": "its ExecStart= is dropped by systemd",
    # A template is many services; a profile is one (units.names).
    "templates-misc/vllm@.service": "a template unit",
}


def _key(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return "/".join(parts[3:] if parts[0] == "tests" else parts)


@pytest.mark.parametrize("path", CORPUS, ids=_key)
def test_corpus_unit_is_imported_with_the_same_argv_and_environment(path: Path) -> None:
    key = _key(path)
    text = path.read_text(encoding="utf-8")
    if key in NOT_VLLM or key in REFUSED:
        with pytest.raises(Exception, match="cannot be imported"):
            import_unit(text=text, filename=path.name, actor=None)
        return
    result = import_unit(text=text, filename=path.name, actor=None)
    differences = result.sameness.argv_differences + result.sameness.environment_differences
    assert result.sameness.equal, differences
