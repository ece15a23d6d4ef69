"""The import on every unit of the real-world corpus and the examples: each vLLM unit
becomes a profile whose rendered unit gives every Exec command the same argv and the
same environment (through the linter's Exec model); each one that is not imported is
named here with its reason (docs/unit-import.md has the figures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from units.importing.service import import_unit

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]
CORPUS = sorted(
    [*(ROOT / "tests/linting/realworld").rglob("*.service"), *(ROOT / "examples").glob("*.service")]
)
# Units that run no vLLM server that the unit shows, and why (not counted as vLLM units).
# Each value is what the import's refusal says.
NOT_VLLM = {
    "llamacpp/llama-server.service": "it runs /opt/llama.cpp/build/bin/llama-server",
    "sglang/sglang.service": "does not run a vLLM server directly",
    "ray-cluster/ray-head.service": "it runs /opt/ray/bin/ray",
    "ray-cluster/ray-worker.service": "it runs /opt/ray/bin/ray",
    # vLLM is somewhere in the compose file, which is not part of the unit.
    "gh-compose-oneshot/vllm.service": "runs `docker compose`",
}
# vLLM units a profile cannot describe, and why (counted: each is a miss). A profile
# writes the vLLM command itself; here vLLM's words are elsewhere, in words of a wrapper
# the profile has no fields for (docs/unit-import.md, "What is not imported").
CONTAINER = "runs vLLM in a container"
SCRIPT = "runs the script"
REFUSED: dict[str, str] = {
    "docker-vllm/vllm-detached.service": CONTAINER,
    "docker-vllm/vllm-docker.service": CONTAINER,
    "docker-vllm/vllm-podman.service": CONTAINER,
    "gh-docker-template/vllm.service": CONTAINER,
    "wrapper/vllm-wrapper.service": SCRIPT,
    "gh-docker-script/nlp-llm.service": SCRIPT,  # the script runs docker
    "gh-entrypoint-args/llava.service": SCRIPT,  # vLLM's arguments split: unit and script
    "gh-user-spark/vllm.service": SCRIPT,
    "gh-instance-misuse/vllm.service": SCRIPT,  # `env bash /home/%i/…/serve.sh`
    "gh-nohup-forking/vllm.service": SCRIPT,  # nohup … &, Type=forking
    "gh-placeholder-cpu/vllm.service": "runs a shell script (`bash -c …`)",
    # systemd refuses `venv/bin/vllm` (neither a plain name nor an absolute path): the
    # unit has no ExecStart= command at all, so there is nothing to run the same.
    "templates-misc/vllm-relative.service": "0 ExecStart= commands",
    # A template is many services; a profile is one (units.names).
    "templates-misc/vllm@.service": "Templates",
}


def _key(path: Path) -> str:
    parts = path.relative_to(ROOT).parts
    return "/".join(parts[3:] if parts[0] == "tests" else parts)


@pytest.mark.parametrize("path", CORPUS, ids=_key)
def test_corpus_unit_is_imported_with_the_same_argv_and_environment(path: Path) -> None:
    key = _key(path)
    text = path.read_text(encoding="utf-8")
    if key in NOT_VLLM or key in REFUSED:
        reason = NOT_VLLM.get(key) or REFUSED[key]
        with pytest.raises(ValidationError) as refused:
            import_unit(text=text, filename=path.name, actor=None)
        assert reason in " ".join(refused.value.messages)
        return
    result = import_unit(text=text, filename=path.name, actor=None)
    differences = result.sameness.argv_differences + result.sameness.environment_differences
    assert result.sameness.equal, differences


def test_every_unit_named_in_the_tables_is_in_the_corpus() -> None:
    """A renamed corpus file cannot leave a stale reason behind."""
    assert set(NOT_VLLM) | set(REFUSED) <= set(map(_key, CORPUS))
