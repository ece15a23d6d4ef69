"""Every profile field rejects what systemd or vLLM would reject, in the operator's terms."""

from __future__ import annotations

from typing import Any

import pytest

from deploys.jobs.policy import PipelinePolicy
from tests.units.factories import baseline, ngram
from units.linting import _spec_field
from units.rendering import render_unit
from units.speculative import method_shape, spec_methods
from units.validation import field_choices, validate_profile_data


def errors_for(**overrides: Any) -> dict[str, list[str]]:
    return validate_profile_data(baseline(**overrides))


def test_the_seed_profiles_are_valid() -> None:
    assert validate_profile_data(baseline()) == {}
    assert validate_profile_data(ngram()) == {}


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("name", "", "A unit name is required"),
        ("name", "vllm.service", "without “.service”"),
        ("name", "a/b", "cannot contain “/”"),
        ("name", "vllm@1", "Templates"),
        ("name", "vllm kimi", "Not allowed in a unit name"),
        ("description", "two\nlines", "cannot contain a newline"),
        ("description", "ends with \\", "cannot end with “\\”"),
        ("vllm_executable", "", "Give the path"),
        ("vllm_executable", "vllm", "absolute path"),
        ("vllm_executable", "/opt/vl\tlm/bin/vllm", "cannot contain a tab"),
        ("vllm_executable", '/opt/"vllm"/bin/vllm', "quotes"),
        ("vllm_executable", "/opt/$HOME/bin/vllm", "“$”"),
        ("vllm_executable", "/opt//vllm/bin/vllm", "Write the path plainly"),
        ("vllm_executable", "/opt/vllm/bin/../bin/vllm", "Write the path plainly"),
        ("vllm_executable", "/usr/bin/bash", "must be `vllm`"),
        ("vllm_executable", "%n/bin/vllm", "absolute path"),
        ("vllm_executable", "%h/%i/vllm", "Only a leading"),
        ("vllm_executable", "%h//vllm", "Write the path plainly"),
        ("vllm_executable", "%h/vllm/bin/vllm", None),
        ("model", "", "Give the model path"),
        ("model", "/models/a\nb", "cannot contain a newline"),
        ("model", "--trust-remote-code", "cannot start with “-”"),
        ("served_model_names", ["kimi", "kimi"], "listed twice"),
        ("served_model_names", ["-kimi"], "cannot start with “-”"),
        ("served_model_names", ["a\tb"], "cannot contain a tab"),
        ("served_model_names", "kimi", None),  # a string is split into names
        ("served_model_names", [1], "list of texts"),
        ("host", "", "Give the address"),
        ("host", "[::]", "without brackets"),
        ("host", "gpu node", "neither an IP address nor a host name"),
        ("host", "300.1.1.1", "neither an IP address nor a host name"),
        ("host", "-bad.example.com", "neither an IP address nor a host name"),
        ("port", 0, "between 1 and 65535"),
        ("port", 65536, "between 1 and 65535"),
        ("port", "80a", "whole number"),
        ("port", None, "required"),
        ("tensor_parallel_size", 0, "1 to 64"),
        ("tensor_parallel_size", 9, "needs 9 GPUs, but the GPU list makes 8 visible"),
        ("gpu_devices", "0,1,,2", "empty entry"),
        ("gpu_devices", "0,1,x", "“x” is not a GPU index"),
        ("gpu_devices", "GPU-1234", "not a GPU index"),
        ("gpu_devices", "0,1,01", "GPU 01 is listed twice: CUDA then makes no GPU visible"),
        ("gpu_devices", "0,4294967296", "beyond 32 bits"),
        (
            "gpu_devices",
            "GPU-2eb6f7e6-d050-65b0-231b-13f31e8c9ac4,GPU-2EB6F7E6-D050-65B0-231B-13F31E8C9AC4",
            "listed twice",
        ),
        ("gpu_memory_utilization", "0", "above 0, at most 1"),
        ("gpu_memory_utilization", "1.01", "above 0, at most 1"),
        ("gpu_memory_utilization", "-0.5", "above 0, at most 1"),
        ("gpu_memory_utilization", "abc", "fraction such as 0.9"),
        ("gpu_memory_utilization", "0.9251", "three decimals"),
        ("max_model_len", "32 k", "cannot read “32 k”"),
        ("max_model_len", "1.5K", "Decimals are not allowed with binary suffixes"),
        ("max_model_len", "0", "at least 1 token"),
        ("max_num_seqs", 0, "at least 1"),
        ("quantization", "int4", "has no quantization method “int4”"),
        ("kv_cache_dtype", "fp4", "has no KV cache dtype “fp4”"),
        ("trust_remote_code", "yes", "yes or no"),
        ("extra_args", "--enable-prefix-caching", "list of texts"),
        ("extra_args", [""], "cannot be empty"),
        ("extra_args", ["--a\nb"], "cannot contain a newline"),
        ("extra_args", ["--port", "9000"], "sets the port, which has its own field"),
        ("extra_args", ["-tp", "4"], "sets the tensor parallel size"),
        ("extra_args", ["--speculative-config", "{}"], "sets the speculative decoding"),
        ("extra_args", ["--no-such-flag"], "unrecognized arguments: --no-such-flag"),
        ("extra_args", ["--max-num-batched-tokens", "lots"], "invalid human_readable_int"),
        ("extra_args", ["--speculative-model", "x"], "VL306"),
        ("environment", {"1BAD": "x"}, "not a valid variable name"),
        ("environment", {"A-B": "x"}, "not a valid variable name"),
        ("environment", {"CUDA_VISIBLE_DEVICES": "0"}, "GPU devices field"),
        ("environment", {"A": "x\ny"}, "cannot contain a newline"),
        ("environment", {"A": "x\x00y"}, "cannot contain NUL"),
        ("environment", ["A=1"], "NAME → value"),
        ("user", "bad user", "not a valid user name"),
        ("user", "9lives", "not a valid user name"),
        ("group", "x" * 32, "not a valid group name"),
        ("user", "4294967295", "not a valid numeric ID"),
        ("working_directory", "srv/vllm", "absolute path"),
        ("working_directory", "/srv/./vllm", "Write the path plainly"),
        ("working_directory", "/srv/'x'", "quotes"),
        ("restart", "sometimes", "Choose one of: no, on-failure"),
        ("restart_sec", 100000, "0 to 86400"),
        ("timeout_start_sec", 0, "start timeout must be"),
        ("timeout_stop_sec", 0, "stop timeout must be"),
        ("gpu_free_wait_sec", 1790, "must fit inside the start timeout (1800 s)"),
        ("gpu_free_wait_sec", 0, "at least 1 s"),
        ("target_vllm_version", "0.9.9", "No catalog for vLLM “0.9.9”"),
        ("target_systemd_version", 199, "Choose one of the systemd versions"),
        ("colour", "blue", "Unknown setting “colour”"),
    ],
)
def test_bad_input_is_rejected_with_a_message(field: str, value: Any, expected: str | None) -> None:
    errors = errors_for(**{field: value})
    if expected is None:
        assert errors == {}
        return
    messages = [m for ms in errors.values() for m in ms]
    assert any(expected in m for m in messages), errors


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        # str.isdigit() holds for these, int() refuses "²": a 500 on every keystroke
        ("port", "²", "whole number"),
        ("gpu_devices", "0,²", "“²” is not a GPU index"),
        ("user", "²", "not a valid user name"),
        # int() reads other scripts' digits; CUDA and systemd do not
        ("port", "٨٠٠٠", "whole number"),
        ("gpu_devices", "٠,١,٢,٣,٤,٥,٦,٧", "“٠” is not a GPU index"),
        ("group", "٣", "not a valid group name"),
    ],
)
def test_only_ascii_digits_are_numbers(field: str, value: str, expected: str) -> None:
    errors = errors_for(**{field: value})
    assert any(expected in m for m in errors.get(field, [])), errors


def test_numeric_id_65535_is_refused_like_systemd_does() -> None:
    """uid_is_valid() refuses the 16-bit -1; systemd would not run the unit as that user."""
    assert "not a valid numeric ID" in errors_for(user="65535")["user"][0]
    assert "not a valid numeric ID" in errors_for(group="65535")["group"][0]
    assert errors_for(user="65534", group="0") == {}


@pytest.mark.parametrize(
    ("field", "method"),
    [
        ("spec_num_tokens", "ngram"),
        ("spec_prompt_lookup_max", "ngram"),
        ("spec_draft_tensor_parallel_size", "eagle"),
    ],
)
def test_speculative_numbers_beyond_the_database_column_are_refused(
    field: str, method: str
) -> None:
    """No vLLM limit, but the integer column ends at 2**31 - 1: the save must not fail in
    the database (PostgreSQL) or overflow (SQLite beyond 2**63)."""
    data = ngram(spec_method=method, **{field: 2**31})
    if method == "eagle":
        data.update(spec_prompt_lookup_max=None, spec_draft_model="/models/draft")
    assert validate_profile_data(data)[field] == ["Enter a number up to 2147483647."]


def test_range_messages_name_both_ends() -> None:
    assert "at most 1000000" in errors_for(max_num_seqs=10**7)["max_num_seqs"][0]
    assert (
        "0 to 10000000 MiB" in errors_for(gpu_free_threshold_mib=10**8)["gpu_free_threshold_mib"][0]
    )


def test_an_executable_under_a_directory_specifier_is_written_as_it_is() -> None:
    """`%h/vllm/bin/vllm`: systemd expands the home directory's specifier at load time
    (systemd.unit(5), "Specifiers"), so the path is absolute on the host; the rest of the
    word is escaped as ever."""
    data = baseline(vllm_executable="%h/vllm%/bin/vllm")
    assert errors_for(vllm_executable="%h/vllm/bin/vllm") == {}
    assert "ExecStart=%h/vllm%%/bin/vllm serve \\" in render_unit(data)


def test_stripped_executable_path_is_accepted() -> None:
    assert errors_for(vllm_executable="  /opt/vllm/bin/vllm\n") == {}


def test_extra_argument_findings_name_the_argument_and_the_field() -> None:
    errors = errors_for(extra_args=["--enable-prefix-caching", "--no-such-flag"])
    assert list(errors) == ["extra_args"]
    assert errors["extra_args"][0].startswith("“--no-such-flag”: ")
    assert "(VL320)" in errors["extra_args"][0]


def test_valid_extra_arguments_with_nasty_values_pass() -> None:
    extra = ["--api-key", "a b'c\"d $HOME %n \\x", "--enable-prefix-caching"]
    assert errors_for(extra_args=extra) == {}


def test_max_model_len_follows_the_target_versions_parser() -> None:
    # `t`/`T` joined human_readable_int in 0.16.0; older versions fail on them
    assert errors_for(max_model_len="1t", target_vllm_version="0.16.0") == {}
    errors = errors_for(max_model_len="1t", target_vllm_version="0.11.0")
    assert "cannot read “1t”" in errors["max_model_len"][0]
    for good in ("32768", "32k", "32K", "1m", "25.6k"):
        assert errors_for(max_model_len=good) == {}, good


def test_quantization_choices_come_from_the_target_catalog() -> None:
    assert "compressed-tensors" in field_choices("quantization", "0.16.0")
    assert "fp8" in field_choices("kv_cache_dtype", "0.16.0")
    assert "fp8_ds_mla" not in field_choices("kv_cache_dtype", "0.8.5")
    errors = errors_for(kv_cache_dtype="fp8_ds_mla", target_vllm_version="0.8.5")
    assert "has no KV cache dtype" in errors["kv_cache_dtype"][0]


def test_gpu_uuids_count_as_devices() -> None:
    uuids = ",".join(f"GPU-{i:08x}-0000-0000-0000-000000000000" for i in range(8))
    assert errors_for(gpu_devices=uuids) == {}
    assert errors_for(gpu_devices="MIG-GPU-1/1/0", tensor_parallel_size=1) == {}
    assert errors_for(gpu_devices="", tensor_parallel_size=16) == {}  # no list: vLLM decides


# -- speculative decoding ----------------------------------------------------------------


def test_spec_methods_come_from_the_target_version() -> None:
    assert "suffix" not in spec_methods("0.11.0")
    assert "suffix" in spec_methods("0.16.0")
    assert "medusa" not in spec_methods("0.33.0")
    assert "[ngram]" not in spec_methods("0.8.5")  # an alias, not a choice
    assert all(method_shape(m) is not None for m in spec_methods("0.33.0"))


@pytest.mark.parametrize(
    ("overrides", "field", "expected"),
    [
        ({"spec_method": "suffix", "target_vllm_version": "0.11.0"}, "spec_method", "not accepted"),
        ({"spec_method": "medusa", "target_vllm_version": "0.33.0"}, "spec_method", "not accepted"),
        ({"spec_method": "magic"}, "spec_method", "is not a speculative method"),
        (
            {"spec_num_tokens": None},
            "spec_num_tokens",
            "needs a number of speculative tokens (num_speculative_tokens).",
        ),
        ({"spec_num_tokens": 0}, "spec_num_tokens", "at least 1"),
        ({"spec_prompt_lookup_min": 0}, "spec_prompt_lookup_min", "at least 1"),
        ({"spec_prompt_lookup_min": 5}, "spec_prompt_lookup_min", "larger than max (4)"),
        ({"spec_draft_model": "/models/draft"}, "spec_draft_model", "does not take a draft model"),
        (
            {"spec_draft_tensor_parallel_size": 1},
            "spec_draft_tensor_parallel_size",
            "does not take a draft tensor parallel size",
        ),
        (
            {"spec_method": "eagle", "spec_prompt_lookup_max": None},
            "spec_draft_model",
            "needs a draft model (model).",
        ),
        (
            {"spec_method": "mtp", "spec_prompt_lookup_max": 4},
            "spec_prompt_lookup_max",
            "does not take a prompt lookup max",
        ),
        (
            {"spec_method": "", "spec_prompt_lookup_max": 4, "spec_num_tokens": None},
            "spec_prompt_lookup_max",
            "only used with a speculative method",
        ),
    ],
)
def test_speculative_fields_follow_the_method(
    overrides: dict[str, Any], field: str, expected: str
) -> None:
    errors = validate_profile_data(ngram(**overrides))
    assert any(expected in m for m in errors.get(field, [])), errors


def test_draft_model_methods_take_their_fields() -> None:
    eagle = ngram(
        spec_method="eagle3",
        spec_prompt_lookup_max=None,
        spec_draft_model="/models/Kimi-K2.5-eagle3",
        spec_draft_tensor_parallel_size=1,
    )
    assert validate_profile_data(eagle) == {}
    too_wide = {**eagle, "spec_draft_tensor_parallel_size": 16}
    assert (
        "cannot use more GPUs"
        in validate_profile_data(too_wide)["spec_draft_tensor_parallel_size"][0]
    )


def test_mtp_and_suffix_take_only_tokens() -> None:
    for method in ("mtp", "deepseek_mtp", "suffix"):
        data = ngram(spec_method=method, spec_prompt_lookup_max=None)
        assert validate_profile_data(data) == {}, method
        assert validate_profile_data({**data, "spec_num_tokens": None}) == {}, method


def test_lint_findings_on_speculative_config_map_to_their_field(monkeypatch) -> None:  # type: ignore[no-untyped-def]

    assert _spec_field("prompt_lookup_min=5 is larger than …") == "spec_prompt_lookup_min"
    assert _spec_field("num_speculative_tokens must be > 0") == "spec_num_tokens"
    assert _spec_field("method 'x' is not accepted") == "spec_method"


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("deploy_ready_timeout_sec", 5, "The readiness wait must be 10 to 14400 seconds."),
        ("deploy_ready_timeout_sec", 20000, "The readiness wait must be 10 to 14400 seconds."),
        ("deploy_journal_check_sec", 0, "The journal check must watch 1 to 600 seconds."),
        ("deploy_gpu_clean_sec", 5000, "The GPU-clean wait must be 1 to 1800 seconds."),
        ("deploy_kill_grace_sec", 601, "The kill grace period must be 0 to 600 seconds."),
        ("deploy_ready_timeout_sec", None, "This field is required."),
    ],
)
def test_the_deploy_job_waits_are_bounded(field: str, value: Any, expected: str) -> None:
    """Bounded so that a job and its rollback fit the worker's time limit
    (deploys.jobs.checks); the defaults are a 45-minute load and a 15-second journal check."""
    assert errors_for(**{field: value}).get(field) == [expected]


def test_versions_saved_before_the_deploy_job_settings_get_the_defaults() -> None:
    policy = PipelinePolicy.from_profile_data({"timeout_stop_sec": 120})
    assert (policy.journal_check_s, policy.ready_timeout_s, policy.rollback) == (15, 2700, True)
    assert (policy.clean.grace_s, policy.clean.kill_foreign, policy.clean.threshold_mib) == (
        10,
        False,
        1000,
    )
