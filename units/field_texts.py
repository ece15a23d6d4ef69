"""What the profile form says about each field: its label, its help, and the sections
the edit page groups fields into (in the order an operator thinks)."""

from __future__ import annotations

from units.speculative import SPEC_FIELDS, SPEC_KEYS

SPEC_KEYS_METHOD = "method"  # the key of --speculative-config the method goes to

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
    (
        "deploy",
        "Deploy job",
        (
            "deploy_gpu_clean_sec",
            "deploy_kill_grace_sec",
            "deploy_kill_foreign",
            "deploy_journal_check_sec",
            "deploy_ready_timeout_sec",
            "deploy_rollback",
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
    "deploy_gpu_clean_sec": "GPU-clean wait (s)",
    "deploy_kill_grace_sec": "Kill grace period (s)",
    "deploy_kill_foreign": "Kill other users' GPU processes",
    "deploy_journal_check_sec": "Journal check after start (s)",
    "deploy_ready_timeout_sec": "Readiness wait (s)",
    "deploy_rollback": "Roll back on failure",
}

# What each field writes, shown beside its label: the vLLM flag, the key inside
# --speculative-config (units.speculative.SPEC_KEYS), or the unit setting. Checked against
# what the rendering writes (tests/units/test_form.py).
KEYS: dict[str, str] = {
    "name": "NAME.service",
    "description": "Description=",
    "vllm_executable": "ExecStart=",
    "model": "model",
    "served_model_names": "--served-model-name",
    "host": "--host",
    "port": "--port",
    "tensor_parallel_size": "--tensor-parallel-size",
    "gpu_devices": "CUDA_VISIBLE_DEVICES",
    "gpu_memory_utilization": "--gpu-memory-utilization",
    "max_model_len": "--max-model-len",
    "max_num_seqs": "--max-num-seqs",
    "quantization": "--quantization",
    "kv_cache_dtype": "--kv-cache-dtype",
    "trust_remote_code": "--trust-remote-code",
    "enable_expert_parallel": "--enable-expert-parallel",
    "spec_method": SPEC_KEYS_METHOD,
    **SPEC_KEYS,
    "extra_args": "vllm serve …",
    "environment": "Environment=",
    "environment_file": "EnvironmentFile=",
    "user": "User=",
    "group": "Group=",
    "working_directory": "WorkingDirectory=",
    "restart": "Restart=",
    "restart_sec": "RestartSec=",
    "timeout_start_sec": "TimeoutStartSec=",
    "timeout_stop_sec": "TimeoutStopSec=",
    "gpu_free_wait": "ExecStartPre=",
    "gpu_free_wait_sec": "ExecStartPre=",
    "gpu_free_threshold_mib": "ExecStartPre=",
    "target_vllm_version": "lint",
    "target_systemd_version": "lint",
    # read by specadmin's deploy job (deploys/jobs), not written into the unit
    "deploy_gpu_clean_sec": "deploy job",
    "deploy_kill_grace_sec": "deploy job",
    "deploy_kill_foreign": "deploy job",
    "deploy_journal_check_sec": "deploy job",
    "deploy_ready_timeout_sec": "deploy job",
    "deploy_rollback": "deploy job",
}

HELP: dict[str, str] = {
    "name": "The unit is NAME.service (also the profile's name; fixed once saved). Letters, "
    "digits, “_”, “-”, “.”, “:”.",
    "description": "Shown by systemctl status; empty: “vLLM <served name>”.",
    "vllm_executable": "Absolute path of vllm (runs “vllm serve”), or of a venv's python "
    "(runs the OpenAI API server module).",
    "model": "Local path or Hugging Face ID of the model vLLM loads.",
    "served_model_names": "One per line; clients ask for these names. Empty: the model path.",
    "host": "Address vLLM listens on. 0.0.0.0 is every interface: the API is then open to "
    "the network.",
    "port": "Port vLLM listens on (vLLM's default is 8000).",
    "tensor_parallel_size": "GPUs one model copy is split across; usually the number of "
    "GPU devices below.",
    "gpu_devices": "CUDA_VISIBLE_DEVICES: indices (0,1,2) or GPU UUIDs; empty: all GPUs.",
    "gpu_memory_utilization": "Fraction of each GPU's memory vLLM may use, e.g. 0.9.",
    "max_model_len": "Context length in tokens, e.g. 32768, 32k or 128K; empty: the model's.",
    "max_num_seqs": "Requests processed at once (batch size); empty: vLLM's default.",
    "quantization": "Weight quantization method; empty: detected from the model.",
    "kv_cache_dtype": "Data type of the KV cache, e.g. fp8 to fit longer contexts; empty: auto.",
    "trust_remote_code": "Runs the model repository's own Python code. Only for models you trust.",
    "enable_expert_parallel": "Spreads the experts of a mixture-of-experts model over the "
    "GPUs instead of splitting every expert.",
    "gpu_free_wait": "Before starting, wait until every GPU is empty (memory and compute "
    "processes), so vLLM never starts beside a leftover process.",
    "gpu_free_wait_sec": "Bounded wait; must fit inside the start timeout.",
    "gpu_free_threshold_mib": "A GPU counts as free at or below this much used memory.",
    "spec_method": "Speculative decoding method, written into --speculative-config; the "
    "list offers what the target vLLM version accepts.",
    "spec_num_tokens": "Tokens proposed per step, at least 1.",
    "spec_prompt_lookup_min": "n-gram: shortest prompt match to look up, at least 1.",
    "spec_prompt_lookup_max": "n-gram: longest prompt match to look up, at least the min.",
    "spec_draft_model": "The smaller model that proposes the tokens: a path or Hugging Face ID.",
    "spec_draft_tensor_parallel_size": "GPUs the draft model is split across.",
    "extra_args": "More vllm serve arguments, one option per line with its value after a "
    "space or “=” (--max-num-batched-tokens 8192). The value is taken as written, JSON "
    "included; a line without a leading “-” is one more value of the option above.",
    "environment": "One NAME=value per line. GPUs are set above, not here. Secrets go in "
    "the file below, not here.",
    "environment_file": "EnvironmentFile=: an absolute path on the host to a root-only file "
    "of NAME=value lines, e.g. HF_TOKEN=… or VLLM_API_KEY=… (what --api-key reads). The "
    "service fails to start without it; specadmin never reads or shows it.",
    "user": "Account vLLM runs as. Empty: root, which with 0.0.0.0 serves the network as root.",
    "group": "Group vLLM runs as; empty: the user's group.",
    "working_directory": "Directory vLLM starts in; empty: /.",
    "restart": "When systemd restarts vLLM after it exits.",
    "restart_sec": "Pause before a restart.",
    "timeout_start_sec": "Longest start-up systemd waits for, the GPU-free wait included; "
    "large models load for many minutes.",
    "timeout_stop_sec": "How long a stop may take before systemd kills what is left.",
    "target_vllm_version": "Flags and speculative methods are checked against this version "
    "(a host's probed version wins when deploying there).",
    "target_systemd_version": "Unit-file keys and Exec= parsing are checked for this version.",
    "deploy_gpu_clean_sec": "After the stop, every GPU the service uses must be under the "
    "GPU-free threshold with no process left within this time, or nothing is started.",
    "deploy_kill_grace_sec": "The service's leftover GPU processes get SIGTERM, then SIGKILL "
    "after this many seconds.",
    "deploy_kill_foreign": "Off: another user's process on the service's GPUs stops the "
    "deploy and is named. On: it is killed like a leftover.",
    "deploy_journal_check_sec": "The journal is read this long after the start: a bad "
    "argument or config fails the deploy within seconds, not after the model load.",
    "deploy_ready_timeout_sec": "How long /health and /v1/models may take to answer "
    "(model load); a crash is reported as soon as it happens.",
    "deploy_rollback": "A failed deploy puts the previous unit back and restarts it.",
}
