"""Every rule module; importing this package registers the whole catalog."""

from linting.rules import exec_traps, gpu_ops, shellcheck_rule, unit_syntax, vllm_rules  # noqa: F401
