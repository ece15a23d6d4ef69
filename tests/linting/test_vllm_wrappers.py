"""vLLM behind wrappers: launchers, `bash -c` scripts, containers with `--entrypoint`,
scripts that run containers, bash arrays; and shell syntax that is no argument
(redirections, pipelines) after `vllm serve` in a script."""

from __future__ import annotations

from pathlib import Path

from linting.context import UnitContext
from linting.engine import lint_paths, lint_text
from linting.options import LintOptions
from linting.unitfile import parse_text

USER = "[Service]\nUser=vllm\n"


def _servers(text: str, **options: object) -> UnitContext:
    ctx = UnitContext(parse_text(text, "vllm.service"), LintOptions(shellcheck=False, **options))  # type: ignore[arg-type]
    return ctx


def _codes(text: str, *codes: str) -> list[str]:
    report = lint_text(text, "vllm.service", LintOptions(shellcheck=False, select=codes))
    return [f"{f.code} {f.message}" for f in report.findings]


def _script_unit(tmp_path: Path, script: str) -> list[str]:
    root = tmp_path / "host"
    (root / "opt").mkdir(parents=True, exist_ok=True)
    (root / "opt" / "start.sh").write_text("#!/bin/bash\n" + script, encoding="utf-8")
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nUser=vllm\nExecStart=/opt/start.sh\n", encoding="utf-8")
    options = LintOptions(shellcheck=False, select=("VL", "OP410"), script_roots=(str(root),))
    report = lint_paths([str(unit)], options)
    return [f"{f.code}:{f.span.start.line} {f.message}" for f in report.findings]


def test_a_redirection_and_pipeline_after_vllm_serve_are_no_arguments(tmp_path: Path) -> None:
    script = 'LOG=/var/log/vllm.log\nexec vllm serve /models/m --port 8000 2>&1 | tee -a "$LOG"\n'
    assert _script_unit(tmp_path, script) == []
    script = "vllm serve /models/m --port 8000 >> /var/log/vllm.log 2>/dev/null &\nwait\n"
    assert _script_unit(tmp_path, script) == []
    script = "vllm serve /models/m &>/var/log/vllm.log\n"
    assert _script_unit(tmp_path, script) == []


def test_host_inside_a_bash_array_is_seen(tmp_path: Path) -> None:
    script = (
        "ARGS=(\n  --host 0.0.0.0   # every interface\n  --port 8000\n)\n"
        "ARGS+=(--max-model-len 32q)\n"
        'exec /opt/vllm/bin/vllm serve /models/m "${ARGS[@]}"\n'
    )
    found = _script_unit(tmp_path, script)
    assert [f.split(" ", 1)[0] for f in found] == ["VL323:6"]
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nExecStart=/opt/start.sh\n", encoding="utf-8")
    options = LintOptions(
        shellcheck=False, select=("OP410",), script_roots=(str(tmp_path / "host"),)
    )
    [finding] = lint_paths([str(unit)], options).findings
    assert "--host binds every interface" in finding.message
    assert finding.span.start.line == 3  # where the array names it


def test_a_container_with_an_entrypoint_of_python_and_the_vllm_script_is_checked() -> None:
    text = USER + (
        "ExecStart=/usr/bin/docker run --rm --gpus all --entrypoint python3 "
        "vllm/vllm-openai:v0.11.0 /usr/local/bin/vllm serve /models/m --max-num-seqs 8,\n"
    )
    [finding] = _codes(text, "VL323")
    assert "vLLM 0.11.0" in finding


def test_a_container_with_an_entrypoint_of_python_and_the_api_server_module_is_checked() -> None:
    text = USER + (
        "ExecStart=/usr/bin/podman run --rm --device nvidia.com/gpu=all --entrypoint python3 "
        "docker.io/vllm/vllm-openai:v0.16.0 -m vllm.entrypoints.openai.api_server "
        "--model /models/m --gpu-memory-utilisation 0.9\n"
    )
    [finding] = _codes(text, "VL320")
    assert "vLLM 0.16.0" in finding


def test_env_i_and_launchers_with_a_double_dash_are_seen_through() -> None:
    text = USER + (
        "ExecStart=/usr/bin/env -i PATH=/usr/bin HOME=/srv/vllm /usr/bin/numactl "
        "--cpunodebind=0 -- /opt/vllm/bin/python -m vllm.entrypoints.openai.api_server "
        "--model /models/m --dtype fp16\n"
    )
    assert [c.split(" ", 1)[0] for c in _codes(text, "VL321")] == ["VL321"]


def test_a_bash_c_script_with_a_defaulted_interpreter_is_checked() -> None:
    text = USER + (
        'ExecStart=/bin/bash -lc \'exec "$${PYTHON:-/opt/vllm/bin/python}" -m vllm serve '
        "/models/m --max-model-len 32q'\n"
    )
    [finding] = _codes(text, "VL323")
    ctx = _servers(text)
    [server] = ctx.vllm_servers
    assert server.args.argv[0].text == "/opt/vllm/bin/python"
    assert finding.startswith("VL323")


def test_a_script_that_runs_docker_run_d_is_checked_with_the_image_release(
    tmp_path: Path,
) -> None:
    script = (
        "docker rm -f vllm || true\n"
        "docker run -d --name vllm --gpus all -p 8000:8000 vllm/vllm-openai:v0.11.0 \\\n"
        "  --model /models/m --kv-cache-dtype fp8-e4m3\n"
    )
    found = _script_unit(tmp_path, script)
    assert [f.split(" ", 1)[0] for f in found] == ["VL321:4"]
    assert "0.11.0" in found[0]


def test_the_demo_api_server_has_its_own_small_parser() -> None:
    text = USER + (
        "ExecStart=/opt/vllm/bin/python -m vllm.entrypoints.api_server --model /models/m "
        "--host 127.0.0.1 --port 8000 --root-path /llm --api-key secret\n"
    )
    [finding] = _codes(text, "VL320")
    assert "--api-key" in finding
    openai = text.replace("vllm.entrypoints.api_server", "vllm.entrypoints.openai.api_server")
    assert _codes(openai, "VL320") == []


def test_a_pin_in_the_units_own_exec_lines_names_the_release() -> None:
    text = USER + (
        "ExecStartPre=/opt/vllm/bin/pip install vllm==0.11.0\n"
        "ExecStart=/opt/vllm/bin/vllm serve --model /models/m\n"
    )
    [finding] = _codes(text, "VL327")
    assert "vLLM 0.11.0" in finding
    [server] = _servers(text).vllm_servers
    assert server.version.source == "the pin vllm==0.11.0 in ExecStartPre= (line 3)"


def _op409(tmp_path: Path, script: str) -> list[str]:
    root = tmp_path / "host"
    (root / "opt").mkdir(parents=True, exist_ok=True)
    (root / "opt" / "start.sh").write_text("#!/bin/bash\n" + script, encoding="utf-8")
    unit = tmp_path / "vllm.service"
    unit.write_text("[Service]\nUser=vllm\nExecStart=/opt/start.sh\n", encoding="utf-8")
    options = LintOptions(shellcheck=False, select=("OP409",), script_roots=(str(root),))
    return [f.message for f in lint_paths([str(unit)], options).findings]


def test_a_script_that_ends_with_docker_run_d_of_vllm_leaves_the_server_unsupervised(
    tmp_path: Path,
) -> None:
    run = "docker run -d --gpus all vllm/vllm-openai:v0.16.0 \\\n  --model /models/m\n"
    [message] = _op409(tmp_path, run + 'echo "started"\n')
    assert "docker run -d" in message and "outside it" in message
    assert _op409(tmp_path, run + "docker logs -f vllm\n") == []
    assert _op409(tmp_path, run.replace(" -d", "")) == []


def test_vllm_after_and_and_then_in_a_bash_c_script_is_checked() -> None:
    text = USER + (
        "ExecStart=/bin/bash -lc 'source /opt/conda/etc/profile.d/conda.sh && "
        "conda activate vllm && if [ -d /models/m ]; then exec vllm serve /models/m "
        "--max-model-len 32q; fi'\n"
    )
    [finding] = _codes(text, "VL323")
    assert "32q" in finding
