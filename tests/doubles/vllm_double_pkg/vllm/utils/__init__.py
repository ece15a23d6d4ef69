"""TEST DOUBLE: `vllm.utils` (only FlexibleArgumentParser, where vLLM < 0.11 kept it)."""

from vllm.utils.argparse_utils import FlexibleArgumentParser

__all__ = ["FlexibleArgumentParser"]
