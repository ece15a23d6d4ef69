"""VL rules: what vLLM does with a unit's arguments, per version, at exact file positions."""

from __future__ import annotations

from typing import Any

import pytest

from linting.engine import lint_text, lint_units
from linting.findings import Finding, Severity
from linting.options import LintOptions
from linting.unitfile import parse_text

VLLM = "/opt/vllm/bin/vllm serve /models/kimi-k2.5-int4"
NGRAM = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 4}'
# The seed deployment's n-gram unit, as rendered from its profile.
SEED_UNIT = f"""[Unit]
Description=vLLM kimi-k2.5 (n-gram speculative decoding)
After=network-online.target

[Service]
Type=simple
User=vllm
Environment=CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7
ExecStart=/opt/vllm/bin/vllm serve /models/kimi-k2.5-int4 \\
    --served-model-name kimi-k2.5 \\
    --tensor-parallel-size 8 \\
    --enable-expert-parallel \\
    --trust-remote-code \\
    --max-model-len 128k \\
    --gpu-memory-utilization 0.92 \\
    --kv-cache-dtype fp8 \\
    --quantization compressed-tensors \\
    --max-num-seqs 64 \\
    --host 0.0.0.0 --port 8000 \\
    --speculative-config '{NGRAM}'
KillMode=control-group
Restart=on-failure
RestartSec=10
TimeoutStartSec=1800

[Install]
WantedBy=multi-user.target
"""


def lint(text: str, version: str) -> list[Finding]:
    report = lint_text(
        text, "x.service", LintOptions(vllm_version=version, shellcheck=False, select=("VL",))
    )
    return report.files[0].findings


def unit(exec_start: str, *extra: str) -> str:
    return "[Service]\n" + "".join(f"{e}\n" for e in extra) + f"ExecStart={exec_start}\n"


def only(findings: list[Finding], code: str) -> Finding:
    found = [f for f in findings if f.code == code]
    assert len(found) == 1, [(f.code, f.message) for f in findings]
    return found[0]


def codes(findings: list[Finding]) -> list[str]:
    return [f.code for f in findings]


def where(text: str, needle: str, line_no: int | None = None) -> tuple[int, int, int]:
    """(line, start column, end column) of `needle` in the unit text (1-based)."""
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line and (line_no is None or number == line_no):
            col = line.index(needle) + 1
            return number, col, col + len(needle)
    raise AssertionError(f"{needle!r} not in unit")


def assert_at(finding: Finding, text: str, needle: str) -> None:
    line, start, end = where(text, needle)
    assert (finding.span.start.line, finding.span.start.column, finding.span.end.column) == (
        line,
        start,
        end,
    )


# -- the seed unit -------------------------------------------------------------------------


def test_seed_ngram_unit_has_no_vllm_findings_on_0_16() -> None:
    assert lint(SEED_UNIT, "0.16.0") == []


def test_seed_ngram_unit_has_no_vllm_findings_on_0_33() -> None:
    assert lint(SEED_UNIT, "0.33.0") == []


# -- VL301 ---------------------------------------------------------------------------------


def test_vl301_missing_comma_points_at_the_character_in_the_file() -> None:
    spec = '{"method": "ngram" "num_speculative_tokens": 5}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    f = only(lint(text, "0.16.0"), "VL301")
    # JSON stops at the `"` that opens "num_speculative_tokens"
    line, col, _ = where(text, '"num_speculative_tokens"')
    assert (f.span.start.line, f.span.start.column, f.span.end.column) == (line, col, col + 1)
    assert "Expecting ',' delimiter" in f.message
    assert "at argument parsing" in f.message
    assert f.data["received"] == spec


def test_vl301_nested_double_quotes_point_at_the_unquoted_key() -> None:
    text = unit(f'{VLLM} --speculative-config "{{"method": "ngram"}}"')
    f = only(lint(text, "0.16.0"), "VL301")
    # vLLM receives `{method: ngram}`: the error is at `m` of method in the file
    line, col, _ = where(text, 'method"')
    assert (f.span.start.line, f.span.start.column, f.span.end.column) == (line, col, col + 1)
    assert "{method: ngram}" in f.message
    assert "single quotes" in f.message


def test_vl301_json_that_kept_its_shell_quotes_says_to_drop_them() -> None:
    # What a profile renders from `--speculative-config '{…}'` pasted into Extra arguments
    # (the value is taken as written): vLLM receives the quotes too.
    written = '"\'{\\"method\\": \\"ngram\\"}\'"'  # systemd's \" inside "…"
    text = unit(f"{VLLM} --speculative-config {written}")
    f = only(lint(text, "0.16.0"), "VL301")
    assert f.data["received"] == """'{"method": "ngram"}'"""
    assert "the ' quotes around it are part of the value" in f.message


def test_vl301_truncated_json_points_after_the_last_character() -> None:
    text = unit(f'{VLLM} --speculative-config \'{{"method": "ngram"\'')
    f = only(lint(text, "0.11.0"), "VL301")
    line, col, _ = where(text, "\"'")
    assert (f.span.start.line, f.span.start.column) == (line, col + 1)  # the closing `'`
    assert "Expecting ',' delimiter" in f.message


def test_vl301_valid_json_that_is_not_an_object() -> None:
    text = unit(f"{VLLM} --speculative-config '[5]'")
    f = only(lint(text, "0.16.0"), "VL301")
    assert "not an object" in f.message
    assert_at(f, text, "[5]")


def test_vl301_not_reported_for_valid_json() -> None:
    assert "VL301" not in codes(lint(unit(f"{VLLM} --speculative-config '{NGRAM}'"), "0.8.5"))


# -- VL302 ---------------------------------------------------------------------------------

TYPO = '{"method": "ngram", "num_speculative_tokens": 5, "promt_lookup_max": 4}'


def test_vl302_unknown_key_silently_ignored_on_0_11() -> None:
    text = unit(f"{VLLM} --speculative-config '{TYPO}'")
    f = only(lint(text, "0.11.0"), "VL302")
    assert f.severity == Severity.ERROR
    assert_at(f, text, '"promt_lookup_max"')
    assert "vLLM 0.11.0 silently ignores" in f.message
    assert "ngram runs with prompt_lookup_max=5" in f.message
    assert "did you mean `prompt_lookup_max`" in f.message
    assert f.data["speculative_config"]["promt_lookup_max"] == 4


def test_vl302_unknown_key_refuses_to_start_on_0_16() -> None:
    text = unit(f"{VLLM} --speculative-config '{TYPO}'")
    f = only(lint(text, "0.16.0"), "VL302")
    assert "vLLM 0.16.0 refuses to start" in f.message
    assert "Unexpected keyword argument" in f.message
    assert "silently" not in f.message


def test_vl302_unknown_key_type_error_on_0_8_5() -> None:
    f = only(lint(unit(f"{VLLM} --speculative-config '{TYPO}'"), "0.8.5"), "VL302")
    assert "TypeError" in f.message


def test_vl302_ignored_key_reports_what_runs_instead_from_the_other_lookup() -> None:
    spec = (
        '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 2, '
        '"promt_lookup_max": 4}'
    )
    f = only(lint(unit(f"{VLLM} --speculative-config '{spec}'"), "0.11.0"), "VL302")
    # vLLM copies prompt_lookup_min into the missing prompt_lookup_max
    assert "prompt_lookup_max=2" in f.message


def test_vl302_dashed_keys_are_normalised_on_0_33_only() -> None:
    spec = '{"method": "ngram", "num-speculative-tokens": 5}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    assert "VL302" not in codes(lint(text, "0.33.0"))
    assert "VL302" in codes(lint(text, "0.16.0"))


def test_vl302_dotted_key() -> None:
    text = unit(f"{VLLM} --speculative-config.method ngram --speculative-config.num_tokens 5")
    f = only(lint(text, "0.16.0"), "VL302")
    assert_at(f, text, "num_tokens")


# -- VL303 / VL308 -------------------------------------------------------------------------


def test_vl303_medusa_not_on_0_33() -> None:
    spec = '{"method": "medusa", "model": "/models/medusa", "num_speculative_tokens": 3}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    f = only(lint(text, "0.33.0"), "VL303")
    assert_at(f, text, '"medusa"')
    assert "accepted by vLLM 0.8.5 to 0.32.0" in f.message
    assert "VL303" not in codes(lint(text, "0.16.0"))


def test_vl303_eagle3_accepted_on_0_8_5() -> None:
    spec = '{"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 3}'
    assert "VL303" not in codes(lint(unit(f"{VLLM} --speculative-config '{spec}'"), "0.8.5"))


def test_vl303_suffix_on_0_16_not_on_0_11() -> None:
    spec = '{"method": "suffix", "num_speculative_tokens": 8}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    assert "VL303" not in codes(lint(text, "0.16.0"))
    f = only(lint(text, "0.11.0"), "VL303")
    assert "vLLM 0.11.0 refuses to start" in f.message
    assert "accepted by vLLM 0.11.1 to 0.34.0" in f.message


def test_vl308_mtp_alias_deprecated_warning() -> None:
    spec = '{"method": "deepseek_mtp", "num_speculative_tokens": 1}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    f = only(lint(text, "0.33.0"), "VL308")
    assert f.severity == Severity.WARNING
    assert "replaced with mtp" in f.message
    assert_at(f, text, '"deepseek_mtp"')
    plain = '{"method": "mtp", "num_speculative_tokens": 1}'
    assert lint(unit(f"{VLLM} --speculative-config '{plain}'"), "0.33.0") == []


# -- VL304 ---------------------------------------------------------------------------------


def test_vl304_zero_speculative_tokens() -> None:
    text = unit(
        f'{VLLM} --speculative-config \'{{"method": "ngram", "num_speculative_tokens": 0}}\''
    )
    f = only(lint(text, "0.16.0"), "VL304")
    line, col, _ = where(text, "0}")
    assert (f.span.start.line, f.span.start.column, f.span.end.column) == (line, col, col + 1)
    assert "greater than 0" in f.message


def test_vl304_lookup_min_above_max() -> None:
    spec = (
        '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 6, '
        '"prompt_lookup_max": 4}'
    )
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    f = only(lint(text, "0.11.0"), "VL304")
    line, col, _ = where(text, "6,")
    assert (f.span.start.line, f.span.start.column, f.span.end.column) == (line, col, col + 1)
    assert "prompt_lookup_min=6 is larger than prompt_lookup_max=4" in f.message


def test_vl304_only_min_given_copies_into_max_so_no_error() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_min": 6}'
    assert lint(unit(f"{VLLM} --speculative-config '{spec}'"), "0.16.0") == []


def test_vl304_lookup_zero() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": 5, "prompt_lookup_max": 0}'
    f = only(lint(unit(f"{VLLM} --speculative-config '{spec}'"), "0.16.0"), "VL304")
    assert "prompt_lookup_max must be >= 1" in f.message


def test_vl304_string_where_int_expected() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": "five"}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    f = only(lint(text, "0.16.0"), "VL304")
    assert_at(f, text, '"five"')
    assert "JSON number" in f.message


def test_vl304_numeric_string_depends_on_version() -> None:
    spec = '{"method": "ngram", "num_speculative_tokens": "5"}'
    text = unit(f"{VLLM} --speculative-config '{spec}'")
    assert "VL304" not in codes(lint(text, "0.16.0"))  # pydantic lax mode converts "5"
    assert "VL304" in codes(lint(text, "0.8.5"))  # a plain dataclass keeps the string


# -- VL305 ---------------------------------------------------------------------------------


def test_vl305_tensor_parallel_size_in_spec_config() -> None:
    spec = '{"model": "/models/draft", "num_speculative_tokens": 4, "tensor_parallel_size": 1}'
    text = unit(f"{VLLM} -tp 4 --speculative-config '{spec}'")
    f = only(lint(text, "0.16.0"), "VL305")
    assert_at(f, text, '"tensor_parallel_size"')
    assert "draft_tensor_parallel_size" in f.message
    assert "VL302" not in codes(lint(text, "0.16.0"))
    assert "silently ignores" in only(lint(text, "0.11.0"), "VL305").message


# -- VL306 ---------------------------------------------------------------------------------


def test_vl306_removed_speculative_flags() -> None:
    text = unit(f"{VLLM} --speculative-model [ngram] --num-speculative-tokens 5")
    found = [f for f in lint(text, "0.8.5") if f.code == "VL306"]
    assert len(found) == 2
    assert_at(found[0], text, "--speculative-model")
    assert '"model"' in found[0].message
    assert '"num_speculative_tokens"' in found[1].message
    assert "VL320" not in codes(lint(text, "0.8.5"))


# -- VL307 ---------------------------------------------------------------------------------


def test_vl307_shorthand_conflicts_with_json_key_on_0_33() -> None:
    text = unit(f"{VLLM} --spec-tokens 4 --speculative-config '{NGRAM}'")
    f = only(lint(text, "0.33.0"), "VL307")
    assert_at(f, text, "--spec-tokens")
    assert "mutually exclusive" in f.message


def test_vl307_shorthand_without_conflict() -> None:
    text = unit(f"{VLLM} --spec-method ngram --spec-tokens 4")
    assert lint(text, "0.33.0") == []


# -- VL309 ---------------------------------------------------------------------------------


def test_vl309_dotted_key_replaces_the_json() -> None:
    text = unit(
        f"{VLLM} --speculative-config '{NGRAM}' --speculative-config.num_speculative_tokens 3"
    )
    f = only(lint(text, "0.16.0"), "VL309")
    assert f.span.start.column == where(text, "--speculative-config '")[1]
    assert "not merged" in f.message


# -- VL320 / VL321 / VL322 / VL323 / VL326 / VL327 / VL328 ------------------------------------


def test_vl320_unknown_flag_with_suggestion() -> None:
    text = unit(f"{VLLM} --gpu-memory-utilisation 0.9")
    f = only(lint(text, "0.16.0"), "VL320")
    assert_at(f, text, "--gpu-memory-utilisation")
    assert "did you mean `--gpu-memory-utilization`" in f.message
    assert f.fix is None  # a suggestion is not a safe fix


def test_vl320_flag_known_in_newer_version_only() -> None:
    text = unit(f"{VLLM} --spec-tokens 4")
    assert "VL320" in codes(lint(text, "0.16.0"))
    assert "VL320" not in codes(lint(text, "0.33.0"))


def test_vl320_inline_value_not_in_span() -> None:
    text = unit(f"{VLLM} --tensor-paralel-size=2")
    f = only(lint(text, "0.16.0"), "VL320")
    assert_at(f, text, "--tensor-paralel-size")


def test_vl321_invalid_choice_at_argparse() -> None:
    text = unit(f"{VLLM} --kv-cache-dtype fp8-e4m3")
    f = only(lint(text, "0.16.0"), "VL321")
    assert_at(f, text, "fp8-e4m3")
    assert "invalid choice" in f.message
    assert "did you mean `fp8_e4m3`" in f.message


def test_vl321_quantization_runtime_choice_fails_at_engine_start() -> None:
    text = unit(f"{VLLM} --quantization fp9")
    f = only(lint(text, "0.16.0"), "VL321")
    assert "argparse accepts it" in f.message
    assert "Unknown quantization method: fp9" in f.message
    # 0.8.5 has argparse choices for --quantization
    assert "invalid choice" in only(lint(text, "0.8.5"), "VL321").message


def test_vl322_gpu_memory_utilization_percentage() -> None:
    text = unit(f"{VLLM} --gpu-memory-utilization 90")
    f = only(lint(text, "0.16.0"), "VL322")
    assert_at(f, text, "90")
    assert "did you mean 0.9" in f.message
    assert lint(unit(f"{VLLM} --gpu-memory-utilization 1"), "0.16.0") == []
    assert "VL322" in codes(lint(unit(f"{VLLM} --gpu-memory-utilization=0"), "0.16.0"))


@pytest.mark.parametrize(
    ("tail", "value"),
    [
        ("--max-model-len 32q", "32q"),
        ("--max-num-seqs 8,", "8,"),
        ("--gpu-memory-utilization 0,9", "0,9"),
    ],
)
def test_vl323_invalid_numbers(tail: str, value: str) -> None:
    text = unit(f"{VLLM} {tail}")
    f = only(lint(text, "0.16.0"), "VL323")
    assert_at(f, text, value)
    assert "refuses to start at argument parsing" in f.message


def test_vl323_human_readable_max_model_len_accepted() -> None:
    assert lint(unit(f"{VLLM} --max-model-len 32k"), "0.11.0") == []


def test_vl326_missing_value() -> None:
    text = unit(f"{VLLM} --served-model-name --port 8001")
    f = only(lint(text, "0.16.0"), "VL326")
    assert_at(f, text, "--served-model-name")
    assert "expected at least one argument" in f.message


def test_vl327_serve_model_option_on_0_11() -> None:
    text = unit("/opt/vllm/bin/vllm serve --model /models/m")
    f = only(lint(text, "0.11.0"), "VL327")
    assert_at(f, text, "--model")
    assert lint(text, "0.16.0") == []


def test_vl320_model_option_of_0_9_0_exists_for_the_api_server_module_only() -> None:
    # vLLM 0.9.0 adds `--model` only when "serve" is not in sys.argv
    # (vllm/engine/arg_utils.py:451 in 0.9.0; vllm-project/vllm#18999): `vllm serve --model`
    # dies on the ambiguous abbreviation, the OpenAI api_server module takes it.
    serve = unit("/opt/vllm/bin/vllm serve --model /models/m")
    f = only(lint(serve, "0.9.0"), "VL320")
    assert_at(f, serve, "--model")
    assert "ambiguous" in f.message
    module = unit("/opt/vllm/bin/python3 -m vllm.entrypoints.openai.api_server --model /models/m")
    assert lint(module, "0.9.0") == []
    assert lint(module.replace("--model", "--mode"), "0.9.0") != []  # still a real parse


def test_vl328_extra_positional() -> None:
    text = unit(f"{VLLM} /models/draft")
    f = only(lint(text, "0.16.0"), "VL328")
    assert_at(f, text, "/models/draft")


def test_vl330_other_json_flag() -> None:
    text = unit(f"{VLLM} --compilation-config '{{\"level\": 3,}}'")
    f = only(lint(text, "0.16.0"), "VL330")
    assert "Expecting property name" in f.message


# -- VL324 ---------------------------------------------------------------------------------


def test_vl324_tensor_parallel_exceeds_visible_gpus() -> None:
    text = unit(f"{VLLM} --tensor-parallel-size 4", "Environment=CUDA_VISIBLE_DEVICES=0,1")
    f = only(lint(text, "0.16.0"), "VL324")
    line, col, _ = where(text, "--tensor-parallel-size 4")
    assert (f.span.start.line, f.span.start.column, f.span.end.column) == (
        line,
        col,
        col + len("--tensor-parallel-size 4"),
    )
    assert "World size (4)" in f.message and "(2)" in f.message


def test_vl324_counts_pipeline_and_uuids() -> None:
    env = "Environment=CUDA_VISIBLE_DEVICES=GPU-aaaa,GPU-bbbb,GPU-cccc,GPU-dddd"
    assert lint(unit(f"{VLLM} -tp 2 -pp 2", env), "0.16.0") == []
    assert "VL324" in codes(lint(unit(f"{VLLM} -tp 4 -pp 2", env), "0.16.0"))


def test_vl324_data_parallel_ranks() -> None:
    env = "Environment=CUDA_VISIBLE_DEVICES=0,1,2,3"
    f = only(lint(unit(f"{VLLM} -tp 2 -dp 4", env), "0.16.0"), "VL324")
    assert "data parallel 4" in f.message


@pytest.mark.parametrize(
    ("devices", "visible"),
    [("0a,1", 2), ("01,02", 2), ("0,1,a,2,3", 2), ("0,00", 0), ("0,,1,2,3", 1), ("-1", 0)],
)
def test_vl324_counts_the_gpus_as_cuda_reads_the_list(devices: str, visible: int) -> None:
    """`0a` is GPU 0, `01` GPU 1, the list ends at an entry without a number, a GPU named
    twice leaves none (docs/architecture.md, "Operations")."""
    f = only(
        lint(unit(f"{VLLM} -tp 4", f"Environment=CUDA_VISIBLE_DEVICES={devices}"), "0.16.0"),
        "VL324",
    )
    assert f"makes {visible} visible" in f.message


def test_vl324_says_nothing_when_cuda_s_count_is_not_known() -> None:
    env = "Environment=CUDA_VISIBLE_DEVICES=MIG-4f1c2a3b-aaaa-bbbb-cccc-000000000000"
    assert "VL324" not in codes(lint(unit(f"{VLLM} -tp 4", env), "0.16.0"))


def test_vl324_not_without_cuda_visible_devices() -> None:
    assert lint(unit(f"{VLLM} --tensor-parallel-size 8"), "0.16.0") == []


# -- VL325 ---------------------------------------------------------------------------------


def lint_two(a: str, b: str, version: str = "0.16.0") -> dict[str, list[Finding]]:
    units = [
        parse_text(a, "/etc/systemd/system/a.service"),
        parse_text(b, "/etc/systemd/system/b.service"),
    ]
    report = lint_units(units, LintOptions(vllm_version=version, shellcheck=False, select=("VL",)))
    return {fr.path.rsplit("/", 1)[-1]: fr.findings for fr in report.files}


def test_vl325_default_port_in_two_units_reported_on_both() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a")
    b = unit("/opt/vllm/bin/vllm serve /models/b --host 127.0.0.1")
    found = lint_two(a, b)
    fa, fb = only(found["a.service"], "VL325"), only(found["b.service"], "VL325")
    assert "default 8000" in fa.message and "b.service" in fa.message
    assert_at(fa, a, "/opt/vllm/bin/vllm serve")
    assert fb.path.endswith("b.service")


def test_vl325_explicit_port_position() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a --port 8001")
    b = unit("/opt/vllm/bin/vllm serve /models/b --port=8001")
    f = only(lint_two(a, b)["a.service"], "VL325")
    assert_at(f, a, "8001")


def test_vl325_different_ports_or_hosts_are_fine() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a --port 8001")
    b = unit("/opt/vllm/bin/vllm serve /models/b --port 8002")
    assert lint_two(a, b) == {"a.service": [], "b.service": []}
    c = unit("/opt/vllm/bin/vllm serve /models/a --host 10.0.0.1")
    d = unit("/opt/vllm/bin/vllm serve /models/b --host 10.0.0.2")
    assert lint_two(c, d) == {"a.service": [], "b.service": []}


def lint_paths_two(a: str, b: str, pa: str, pb: str, **options: Any) -> dict[str, list[Finding]]:
    units = [parse_text(a, pa), parse_text(b, pb)]
    opts = LintOptions(vllm_version="0.16.0", shellcheck=False, select=("VL325",), **options)
    report = lint_units(units, opts)
    return {fr.path: fr.findings for fr in report.files}


def test_vl325_is_a_warning_that_says_how_to_silence_it() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a")
    b = unit("/opt/vllm/bin/vllm serve /models/b")
    f = only(lint_two(a, b)["a.service"], "VL325")
    assert f.severity == Severity.WARNING
    assert "--same-host" in f.message and "different directories" in f.message


def test_vl325_units_in_different_directories_run_on_different_machines() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a")
    found = lint_paths_two(a, a, "repo/node1/vllm.service", "repo/node2/vllm.service")
    assert found == {"repo/node1/vllm.service": [], "repo/node2/vllm.service": []}


def test_vl325_same_host_group_joins_units_of_different_directories() -> None:
    a = unit("/opt/vllm/bin/vllm serve /models/a --port 8001")
    b = unit("/opt/vllm/bin/vllm serve /models/b --port 8001")
    groups = (("repo/gpu1/a.service", "repo/gpu1-extra/*.service"),)
    found = lint_paths_two(
        a, b, "repo/gpu1/a.service", "repo/gpu1-extra/b.service", same_host=groups
    )
    assert codes(found["repo/gpu1/a.service"]) == ["VL325"]
    assert codes(found["repo/gpu1-extra/b.service"]) == ["VL325"]
