"""Rendering: escaping filters, the vLLM argv, the GPU-free wait and golden units."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from linting.engine import lint_text
from linting.findings import Severity
from linting.options import LintOptions
from tests.units.factories import baseline, ngram
from units.linting import lint_profile, lint_profile_data
from units.rendering import gpu_wait_iterations, line_fields, profile_argv, render_unit
from units.templatetags.unitfile import env_assignment, exec_word, spec_json, unit_value
from units.validation import clean_profile_data

GOLDEN = Path(__file__).parent / "golden"


def exec_argv(word_text: str) -> tuple[str, ...]:
    """What systemd passes for `ExecStart=/bin/echo WORD_TEXT` (per the linter's model)."""
    report = lint_text(
        f"[Service]\nExecStart=/bin/echo {word_text}\n", "x.service", LintOptions(shellcheck=False)
    )
    return report.files[0].commands[0].argv[1:]


@pytest.mark.parametrize(
    ("word", "rendered"),
    [
        ("plain", "plain"),
        ("/models/Kimi-K2.5-INT4", "/models/Kimi-K2.5-INT4"),
        ("two words", '"two words"'),
        ('{"a": 1}', "'{\"a\": 1}'"),
        ("it's", '"it\'s"'),
        ("a'b\"c", '"a\'b\\"c"'),
        ("back\\slash", '"back\\\\slash"'),
        ("$HOME", "$$HOME"),
        ("${X}", "$${X}"),
        ("100%", "100%%"),
        ("%n", "%%n"),
        ("", '""'),
        (";", '";"'),
        ("#x", '"#x"'),
        ("tab\there", '"tab\\there"'),
        ("bell\x07", '"bell\\a"'),
        ("esc\x1b", '"esc\\x1b"'),
        ("ünïcødé", "ünïcødé"),
    ],
)
def test_exec_word_quotes_so_systemd_gives_the_word_back(word: str, rendered: str) -> None:
    assert exec_word(word) == rendered
    assert exec_argv(rendered) == (word,)


def test_exec_word_refuses_nul() -> None:
    with pytest.raises(ValueError):
        exec_word("a\x00b")


def test_env_assignment_escapes_specifiers_but_not_dollars() -> None:
    assert env_assignment("A", "1") == "A=1"
    assert env_assignment("A", "x y $z %h") == '"A=x y $z %%h"'
    report = lint_text(
        "[Service]\nEnvironment=" + env_assignment("A", "q\"uo'te $z %h \\") + "\n"
        "ExecStart=/bin/true\n",
        "x.service",
        LintOptions(shellcheck=False),
    )
    # the `$z` stays literal, which the linter points out (a warning, EX208); nothing else
    assert [(f.code, str(f.severity)) for f in report.findings] == [("EX208", "warning")]


def test_unit_value_and_spec_json() -> None:
    assert unit_value("50% faster") == "50%% faster"
    with pytest.raises(ValueError):
        unit_value("a\nb")
    assert spec_json({"method": "ngram", "num_speculative_tokens": 5}) == (
        '{"method": "ngram", "num_speculative_tokens": 5}'
    )


def test_profile_argv_for_vllm_serve() -> None:
    assert profile_argv(ngram()) == [
        "/opt/vllm/bin/vllm",
        "serve",
        "/models/Kimi-K2.5-INT4",
        "--served-model-name",
        "kimi-k2.5",
        "--host",
        "0.0.0.0",
        "--port",
        "8000",
        "--tensor-parallel-size",
        "8",
        "--enable-expert-parallel",
        "--trust-remote-code",
        "--max-model-len",
        "128k",
        "--max-num-seqs",
        "64",
        "--gpu-memory-utilization",
        "0.92",
        "--quantization",
        "compressed-tensors",
        "--kv-cache-dtype",
        "fp8",
        "--speculative-config",
        '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}',
    ]


def test_profile_argv_for_a_venv_python_uses_the_api_server_module() -> None:
    argv = profile_argv(baseline(vllm_executable="/opt/vllm/bin/python3"))
    assert argv[:5] == [
        "/opt/vllm/bin/python3",
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        "/models/Kimi-K2.5-INT4",
    ]
    report = lint_profile_data(baseline(vllm_executable="/opt/vllm/bin/python3"))
    assert [f for f in report.findings if f.severity >= Severity.ERROR] == []
    assert report.files[0].commands[-1].argv == tuple(argv)


def test_rendering_is_deterministic_whatever_the_environment_order() -> None:
    a = render_unit(baseline(environment={"B": "2", "A": "1"}))
    b = render_unit(baseline(environment={"A": "1", "B": "2"}))
    assert a == b
    assert a.index("Environment=A=1") < a.index("Environment=B=2")


def test_unit_defaults() -> None:
    text = render_unit(baseline(user="", group="", working_directory="/srv/vllm"))
    assert "Type=exec\n" in text
    assert "KillMode=control-group\n" in text
    assert "User=" not in text and "Group=" not in text
    assert "WorkingDirectory=/srv/vllm\n" in text
    assert "TimeoutStartSec=1800\nTimeoutStopSec=120\n" in text
    assert "Restart=on-failure\nRestartSec=10\n" in text
    assert text.endswith("[Install]\nWantedBy=multi-user.target\n")


def test_description_defaults_to_the_served_name() -> None:
    assert "Description=vLLM kimi-k2.5\n" in render_unit(baseline(description=""))


# -- the GPU-free wait ---------------------------------------------------------------------


def test_gpu_wait_is_bounded_by_its_setting() -> None:
    for wait in (1, 7, 9, 10, 11, 120, 299, 3600):
        tries, interval = gpu_wait_iterations(wait)
        assert tries * interval <= wait
        assert tries >= 1


def wait_script(data: dict) -> str:
    report = lint_profile_data(data)
    pre = next(c for c in report.files[0].commands if c.key == "ExecStartPre")
    assert pre.argv[:2] == ("/bin/bash", "-c")
    return pre.argv[2]


def test_gpu_wait_checks_the_units_gpus_memory_and_processes() -> None:
    script = wait_script(baseline())  # CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
    smi = "nvidia-smi -i 0,1,2,3,4,5,6,7 "
    assert script.count(smi) == 4 and script.count("nvidia-smi") == 4
    assert f"{smi}--query-gpu=memory.used" in script and "-le 1000" in script
    assert f"{smi}--query-compute-apps=pid " in script
    assert "seq 1 60" in script and "sleep 5" in script  # 60 × 5 s = the 300 s setting
    assert script.endswith("exit 1") and "GPUs 0,1,2,3,4,5,6,7 not free after 300 s" in script


@pytest.mark.parametrize(
    ("devices", "option"),
    [
        ("2", "-i 2 "),
        ("01,02", "-i 1,2 "),  # CUDA reads 01 as GPU 1; nvidia-smi gets the plain index
        (
            "GPU-2EB6F7E6-D050-65B0-231B-13F31E8C9AC4,3",
            "-i GPU-2eb6f7e6-d050-65b0-231b-13f31e8c9ac4,3 ",  # as nvidia-smi prints UUIDs
        ),
    ],
)
def test_gpu_wait_names_the_gpus_cuda_reads_to_nvidia_smi(devices: str, option: str) -> None:
    script = wait_script(baseline(gpu_devices=devices, tensor_parallel_size=1))
    assert script.count(f"nvidia-smi {option}") == 4


def test_gpu_wait_checks_every_gpu_without_a_list_or_where_it_cannot_name_them() -> None:
    script = wait_script(baseline(gpu_devices="", tensor_parallel_size=8))
    assert " -i " not in script and "--id" not in script and "GPUs not free after" in script
    mig = "MIG-4f1c2a3b-aaaa-bbbb-cccc-000000000000"
    script = wait_script(baseline(gpu_devices=mig, tensor_parallel_size=1))
    assert " -i " not in script
    assert f"GPUs (every GPU is checked: {mig} names a MIG device, not a whole GPU)" in script


@pytest.mark.parametrize("version", [252, 255, 257])
def test_gpu_wait_has_no_findings_at_all_shellcheck_included(version: int) -> None:
    mig = "MIG-4f1c2a3b-aaaa-bbbb-cccc-000000000000"
    for data in (
        baseline(),
        baseline(gpu_free_wait_sec=7, gpu_free_threshold_mib=0),
        baseline(gpu_devices="2", tensor_parallel_size=1),
        baseline(gpu_devices=mig, tensor_parallel_size=1),
    ):
        data["target_systemd_version"] = version
        report = lint_profile_data(data, LintOptions(shellcheck=True))
        assert report.findings == [], [(f.code, f.message) for f in report.findings]


def test_without_gpu_wait_there_is_no_exec_start_pre() -> None:
    assert "ExecStartPre" not in render_unit(baseline(gpu_free_wait=False))


def test_a_wait_longer_than_the_start_timeout_is_what_the_linter_catches() -> None:
    lint = lint_profile(baseline(gpu_free_wait_sec=3000, timeout_start_sec=1800))
    assert [f.code for f in lint.report.findings if f.severity >= Severity.ERROR] == ["OP403"]
    by_field = lint.by_field()
    assert [f.code for f in by_field["gpu_free_wait_sec"]] == ["OP403"]


def test_line_fields_point_at_the_field_of_each_line() -> None:
    data = ngram(environment={"HF_HOME": "/srv/hf"}, extra_args=["--seed", "1"])
    text = render_unit(data)
    fields = line_fields(data, text)
    lines = text.splitlines()
    shown = {fields[n]: lines[n - 1] for n in fields}
    assert shown["gpu_devices"].startswith("Environment=CUDA_VISIBLE_DEVICES=")
    assert shown["environment"] == "Environment=HF_HOME=/srv/hf"
    assert shown["spec_method"].lstrip().startswith("--speculative-config")
    assert shown["extra_args"].strip() == "--seed 1"
    assert shown["port"].strip() == "--port 8000 \\"
    assert shown["vllm_executable"] == "ExecStart=/opt/vllm/bin/vllm serve \\"


# -- golden files ----------------------------------------------------------------------------


@pytest.mark.parametrize("data", [baseline(), ngram()], ids=lambda d: d["name"])
def test_golden_units_of_the_seed(data: dict) -> None:
    path = GOLDEN / f"{data['name']}.service"
    text = render_unit(data)
    if os.environ.get("UPDATE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8"), "run with UPDATE_GOLDEN=1 to accept"
    report = lint_profile_data(data)
    assert report.findings == [], [(f.code, f.message) for f in report.findings]


def test_extra_arguments_put_each_option_on_its_own_line() -> None:
    data = baseline(extra_args=["--seed", "-1", "--enable-prefix-caching", "--api-key", "a", "b"])
    text = render_unit(data)
    assert "    --seed -1 \\\n    --enable-prefix-caching \\\n    --api-key a b\n" in text
    assert profile_argv(data)[-6:] == data["extra_args"]


def test_default_description_never_ends_in_a_backslash() -> None:
    """A model path ending in `\\` must not turn Description= into a continuation line
    (found by the property test)."""
    data = clean_profile_data(
        baseline(model="/models/odd\\", description="", served_model_names=[])
    )
    text = render_unit(data)
    line = next(x for x in text.splitlines() if x.startswith("Description="))
    assert line == "Description=vLLM /models/odd"
