"""TEST DOUBLE: `vllm.utils.argparse_utils.FlexibleArgumentParser` (vLLM ≥ 0.11)."""

import argparse


class FlexibleArgumentParser(argparse.ArgumentParser):
    """A plain parser: `make_arg_parser` replaces it with the double's catalog parser."""
