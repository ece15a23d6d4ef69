"""What each deploy-job step does, in words for the job page. The step's own name
(`gpu_clean`) stays beside it: logs, audit events and failure reasons use that name."""

from __future__ import annotations

STEP_TITLES: dict[str, str] = {
    "host_lock": "Lock the host (one job at a time)",
    "preflight": "Check the host and the unit there",
    "vllm_check": "Check the flags with the host's vLLM",
    "push": "Write the approved unit file",
    "daemon_reload": "Reload systemd",
    "stop": "Stop the service",
    "gpu_clean": "Wait until every GPU is free",
    "start": "Start the service",
    "journal_check": "Watch the journal for early errors",
    "readiness": "Wait for /health",
    "benchmark": "Benchmark against the baseline",
    "restore": "Put the previous unit back",
    "remove": "Remove the unit file",
}


def step_title(name: str) -> str:
    """The step in words; a step without a title shows its name."""
    return STEP_TITLES.get(name, name)
