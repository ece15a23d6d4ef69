"""Profiles whose form, rendered unit and findings are pinned byte for byte
(tests/units/test_schema_golden.py): the demo profiles (loaddemo) and the test profiles,
chosen so that every field is set, left empty, or wrong at least once."""

from __future__ import annotations

from typing import Any

from tests.units.factories import baseline, ngram

CASES: dict[str, dict[str, Any]] = {
    "baseline": baseline(),
    "ngram": ngram(),
    "python-exe": baseline(vllm_executable="/opt/vllm/bin/python3"),
    "no-user": baseline(user="", group="", working_directory="/srv/vllm"),
    "no-wait": baseline(gpu_free_wait=False, description=""),
    "env-extra": baseline(
        environment={"HF_HUB_OFFLINE": "1", "A": "x y"},
        environment_file="/etc/specadmin/kimi.env",
        extra_args=["--seed", "-1", "--enable-prefix-caching", "--api-key", "a", "b"],
    ),
    "minimal": baseline(
        served_model_names=[],
        gpu_devices="",
        gpu_memory_utilization=None,
        max_model_len="",
        max_num_seqs=None,
        quantization="",
        kv_cache_dtype="",
        trust_remote_code=False,
        enable_expert_parallel=False,
        tensor_parallel_size=1,
    ),
    "eagle": baseline(
        spec_method="eagle",
        spec_draft_model="/models/eagle",
        spec_num_tokens=3,
        spec_draft_tensor_parallel_size=1,
    ),
    "mtp": baseline(spec_method="mtp", spec_num_tokens=1, target_vllm_version="0.11.0"),
    "suffix": baseline(spec_method="suffix", target_vllm_version="0.14.0"),
    "old-vllm": baseline(target_vllm_version="0.8.5", target_systemd_version=257),
    # wrong, field by field
    "bad-numbers": baseline(port=0, max_num_seqs="many", restart_sec=-1, timeout_stop_sec=0),
    "bad-texts": baseline(
        vllm_executable="vllm",
        model="-m",
        host="[::1]",
        user="9bad",
        working_directory="rel",
        environment_file="/a b",
        description="two\nlines",
    ),
    "bad-gpus": baseline(gpu_devices="0,0", tensor_parallel_size=65, gpu_memory_utilization="2"),
    "bad-wait": baseline(gpu_free_wait_sec=3000, timeout_start_sec=1800),
    "bad-deploy": baseline(
        deploy_gpu_clean_sec=0,
        deploy_kill_grace_sec=601,
        deploy_journal_check_sec=0,
        deploy_ready_timeout_sec=5,
        gpu_free_threshold_mib=10_000_001,
    ),
    "bad-spec-min-max": ngram(spec_prompt_lookup_min=9),
    "bad-spec-fields": ngram(spec_draft_model="/m", spec_draft_tensor_parallel_size=2),
    "bad-spec-method": baseline(spec_method="medusa", spec_draft_model="/m"),
    "spec-without-method": baseline(spec_num_tokens=3),
    "bad-choices": baseline(quantization="nope", kv_cache_dtype="nope", max_model_len="1t"),
    "bad-versions": baseline(target_vllm_version="9.9", target_systemd_version=1),
    "owned-extra": baseline(extra_args=["--port", "9000", "--no-such-flag"]),
    "bad-env": baseline(environment={"1X": "a", "CUDA_VISIBLE_DEVICES": "0"}),
    "lint-error": baseline(extra_args=["--no-such-flag"]),
    "max-len-tera": baseline(max_model_len="1t"),
    "root-open": baseline(user="", group="", host="0.0.0.0"),
}
