"""Where a vLLM server is started from (directly, a container, a wrapper script) and which
release it is linted as."""

from __future__ import annotations

from pathlib import Path

import pytest

from linting.engine import lint_paths, lint_text
from linting.options import LintOptions
from linting.spans import Pos, Traced
from linting.vllm.container import ALL, parse_container_run
from linting.vllm.version import version_in_image, version_in_path


def words(*texts: str) -> list[Traced]:
    return [Traced(t, tuple(Pos(1, i + 1) for i in range(len(t)))) for t in texts]


def lint_one(text: str, **options: object) -> list[str]:
    options.setdefault("shellcheck", False)
    report = lint_text(text, "vllm.service", LintOptions(**options))  # type: ignore[arg-type]
    return [f.code for f in report.findings]


@pytest.mark.parametrize(
    ("path", "release"),
    [
        ("/opt/vllm-0.13.0/bin/vllm", "0.13.0"),
        ("/opt/venvs/vllm0.8.5/bin/python", "0.8.5"),
        ("/srv/vllm_v0.16/bin/vllm", "0.16.0"),
        ("/opt/vllm/venv/bin/vllm", None),
    ],
)
def test_release_in_a_virtualenv_path(path: str, release: str | None) -> None:
    assert version_in_path(path) == release


@pytest.mark.parametrize(
    ("image", "release"),
    [
        ("vllm/vllm-openai:v0.16.0", "0.16.0"),
        ("docker.io/vllm/vllm-openai:0.11.0-cu128", "0.11.0"),
        ("vllm/vllm-openai:latest", None),
        ("vllm/vllm-openai", None),
    ],
)
def test_release_in_an_image_tag(image: str, release: str | None) -> None:
    assert version_in_image(image) == release


def test_docker_run_options_gpus_and_the_arguments_after_the_image() -> None:
    argv = words(
        "/usr/bin/docker", "run", "--rm", "-dit", "--gpus", "2", "-p", "8000:8000",
        "--name=x", "vllm/vllm-openai:v0.16.0", "--model", "m",
    )  # fmt: skip
    run = parse_container_run(argv)
    assert run is not None and run.image.text == "vllm/vllm-openai:v0.16.0"
    assert run.gpus == 2 and run.detached
    assert [w.text for w in argv[run.args]] == ["--model", "m"]


def test_podman_cdi_devices_and_other_images() -> None:
    run = parse_container_run(words("podman", "run", "--device", "nvidia.com/gpu=all", "vllm:x"))
    assert run is not None and run.gpus == ALL
    run = parse_container_run(
        words(
            "podman", "run", "--device", "nvidia.com/gpu=0", "--device", "nvidia.com/gpu=1", "vllm"
        )
    )
    assert run is not None and run.gpus == 2
    assert parse_container_run(words("docker", "run", "--gpus", "all", "nginx")) is None


def test_the_image_tag_picks_the_catalog_and_its_entrypoint() -> None:
    # Up to 0.11.0 the image runs the api_server module, which takes no positional model;
    # from 0.11.1 it runs `vllm serve MODEL`.
    line = "ExecStart=/usr/bin/docker run --gpus all vllm/vllm-openai:{} /m --port 1\n"
    assert "VL328" in lint_one("[Service]\n" + line.format("v0.11.0"))
    assert "VL328" not in lint_one("[Service]\n" + line.format("v0.11.1"))


def test_container_gets_fewer_gpus_than_tensor_parallel() -> None:
    line = "ExecStart=/usr/bin/docker run {} vllm/vllm-openai:v0.16.0 --model /m -tp 4\n"
    assert "VL331" in lint_one("[Service]\n" + line.format("--gpus 2"))
    assert "VL331" in lint_one("[Service]\n" + line.format("--rm"))  # no GPU at all
    assert "VL331" not in lint_one("[Service]\n" + line.format("--gpus all"))
    assert "VL331" not in lint_one("[Service]\n" + line.format("--gpus '\"device=0,1,2,3\"'"))


def test_explicit_release_beats_what_the_unit_shows_which_beats_the_project_pin(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\ndependencies = ["vllm==0.11.0"]\n')
    (tmp_path / "a.service").write_text(
        "[Service]\nUser=v\nExecStart=/opt/v/bin/vllm serve --model /m\n"
    )
    (tmp_path / "b.service").write_text(
        "[Service]\nUser=v\nExecStart=/opt/vllm-0.16.0/bin/vllm serve --model /m --port 9\n"
    )
    report = lint_paths([str(tmp_path)], LintOptions(shellcheck=False, select=("VL327",)))
    by_file = {Path(fr.path).name: fr for fr in report.files}
    assert [f.code for f in by_file["a.service"].findings] == ["VL327"]  # pinned 0.11.0
    assert by_file["a.service"].vllm[0].source.endswith("(vllm==0.11.0)")
    assert by_file["b.service"].findings == []  # the venv says 0.16.0
    explicit = LintOptions(shellcheck=False, select=("VL327",), vllm_version="0.16.0")
    assert lint_paths([str(tmp_path)], explicit).findings == []


def test_an_assumed_release_is_named_in_the_summary() -> None:
    report = lint_text("[Service]\nExecStart=/opt/v/bin/vllm serve /m\n", "x.service")
    [note] = report.notes()
    assert note.startswith("vLLM 0.34.0 assumed") and "x.service" in note


def test_the_vllm_command_in_a_wrapper_script_is_linted_in_the_script(tmp_path: Path) -> None:
    root = tmp_path / "host"
    (root / "opt").mkdir(parents=True)
    script = root / "opt" / "run.sh"
    script.write_text(
        '#!/bin/sh\nMODEL=/models/m\nexec /opt/vllm-0.16.0/bin/vllm serve "$MODEL" \\\n'
        '  --max-num-seqs 8, "$@"\n'
    )
    (tmp_path / "w.service").write_text("[Service]\nUser=v\nExecStart=/opt/run.sh --port 80x\n")
    options = LintOptions(shellcheck=False, select=("VL",), script_roots=(str(root),))
    report = lint_paths([str(tmp_path / "w.service")], options)
    found = sorted((Path(f.path).name, f.span.start.line, f.code) for f in report.findings)
    # one value in the script; the one the unit passes on is reported where "$@" uses it
    assert found == [("run.sh", 4, "VL323"), ("run.sh", 4, "VL323")]
    assert {f.span.start.column for f in report.findings} == {18, 22}
    assert report.files[0].vllm[0].version == "0.16.0"


def test_a_wrapper_script_the_linter_cannot_read_is_left_alone() -> None:
    assert lint_one("[Service]\nUser=v\nExecStart=/opt/llm/start.sh --port 80x\n") == []
