"""What the profile form says about each field: its label, its help, and the sections
the edit page groups fields into (in the order an operator thinks)."""

from __future__ import annotations

from units.speculative import SPEC_FIELDS

# (anchor, title, fields): the edit page's sections, in the order an operator thinks.
SECTIONS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "service",
        "Service",
        (
            "name",
            "description",
            "vllm_executable",
            "host",
            "port",
            "target_vllm_version",
            "target_systemd_version",
        ),
    ),
    (
        "model",
        "Model",
        (
            "model",
            "served_model_names",
            "max_model_len",
            "max_num_seqs",
            "quantization",
            "kv_cache_dtype",
            "trust_remote_code",
        ),
    ),
    (
        "gpus",
        "GPUs",
        (
            "gpu_devices",
            "tensor_parallel_size",
            "enable_expert_parallel",
            "gpu_memory_utilization",
            "gpu_free_wait",
            "gpu_free_wait_sec",
            "gpu_free_threshold_mib",
        ),
    ),
    ("speculative", "Speculative decoding", ("spec_method", *SPEC_FIELDS)),
    ("extra", "Extra arguments", ("extra_args",)),
    ("environment", "Environment", ("environment", "environment_file")),
    (
        "systemd",
        "systemd",
        (
            "user",
            "group",
            "working_directory",
            "restart",
            "restart_sec",
            "timeout_start_sec",
            "timeout_stop_sec",
        ),
    ),
)

LABELS: dict[str, str] = {
    "name": "Unit name",
    "description": "Description",
    "vllm_executable": "vLLM executable",
    "model": "Model",
    "served_model_names": "Served model names",
    "host": "Listen address",
    "port": "Port",
    "tensor_parallel_size": "Tensor parallel size",
    "gpu_devices": "GPU devices",
    "gpu_memory_utilization": "GPU memory utilization",
    "max_model_len": "Max model length",
    "max_num_seqs": "Max sequences",
    "quantization": "Quantization",
    "kv_cache_dtype": "KV cache dtype",
    "trust_remote_code": "Trust remote code",
    "enable_expert_parallel": "Expert parallel",
    "spec_method": "Method",
    "spec_num_tokens": "Speculative tokens",
    "spec_prompt_lookup_min": "Prompt lookup min",
    "spec_prompt_lookup_max": "Prompt lookup max",
    "spec_draft_model": "Draft model",
    "spec_draft_tensor_parallel_size": "Draft tensor parallel size",
    "extra_args": "Extra arguments",
    "environment": "Environment variables",
    "environment_file": "Secrets file on the host",
    "user": "User",
    "group": "Group",
    "working_directory": "Working directory",
    "restart": "Restart",
    "restart_sec": "Restart delay (s)",
    "timeout_start_sec": "Start timeout (s)",
    "timeout_stop_sec": "Stop timeout (s)",
    "gpu_free_wait": "Wait for free GPUs before start",
    "gpu_free_wait_sec": "GPU-free wait (s)",
    "gpu_free_threshold_mib": "GPU-free threshold (MiB)",
    "target_vllm_version": "Target vLLM version",
    "target_systemd_version": "Target systemd version",
}

HELP: dict[str, str] = {
    "name": "The unit is NAME.service. Letters, digits, “_”, “-”, “.”, “:”.",
    "vllm_executable": "Absolute path to `vllm`, or to a venv's python (runs the API server).",
    "model": "Local path or Hugging Face ID.",
    "served_model_names": "One per line; clients use these names in requests.",
    "host": "0.0.0.0 listens on every interface.",
    "gpu_devices": "CUDA_VISIBLE_DEVICES: indices (0,1,2) or GPU UUIDs; empty: all GPUs.",
    "gpu_memory_utilization": "Fraction of each GPU's memory vLLM may use, e.g. 0.9.",
    "max_model_len": "Tokens, e.g. 32768, 32k or 128K.",
    "spec_method": "Methods offered are those the target vLLM version accepts.",
    "extra_args": "One argument per line: an option and its value on separate lines "
    "(or --option=value).",
    "environment": "One NAME=value per line. GPUs are set above, not here. Secrets go in "
    "the file below, not here.",
    "environment_file": "EnvironmentFile=: an absolute path on the host to a root-only file "
    "of NAME=value lines, e.g. HF_TOKEN=… or VLLM_API_KEY=… (what --api-key reads). The "
    "service fails to start without it; specadmin never reads or shows it.",
    "gpu_free_wait_sec": "Bounded wait; must fit inside the start timeout.",
    "gpu_free_threshold_mib": "A GPU counts as free at or below this much used memory.",
    "target_vllm_version": "Flags and speculative methods are checked against this version.",
    "target_systemd_version": "Unit-file keys and Exec= parsing are checked for this version.",
}
