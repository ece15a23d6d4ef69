"""`python -m servebench URL …`: measure a server, print a table (or `--json`).

Exit status: 0 complete, 1 measured but incomplete (some requests failed; the result is
still printed), 2 nothing measured (bad arguments, server unreachable, first request
failed), 3 the gate (`--baseline`) found a regression.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from servebench.gate import DEFAULT_THRESHOLD_PCT, REGRESSED, gate
from servebench.prompts import BUILTIN_SETS
from servebench.report import ProgressBar, format_gate, format_table
from servebench.runner import BenchError, RunSettings, run_sync
from servebench.schema import BenchResult
from servebench.vllm_import import VllmResultError, load_vllm_result


def _levels(text: str) -> list[int]:
    try:
        levels = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected e.g. 1,8,64, got {text!r}") from None
    if not levels or min(levels) < 1:
        raise argparse.ArgumentTypeError("concurrency levels are positive integers")
    return levels


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """What to measure and how (shared with specadmin's `manage.py bench`)."""
    p.add_argument("--endpoint", choices=("completions", "chat"), default="completions")
    p.add_argument("--model", help="model name (default: the first one /v1/models lists)")
    p.add_argument(
        "--prompts",
        default="mix",
        help=f"built-in set ({', '.join(BUILTIN_SETS)}) or a JSONL file (default mix)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-tokens", type=int, default=256)
    p.add_argument(
        "--no-ignore-eos",
        dest="ignore_eos",
        action="store_false",
        help="do not send vLLM's ignore_eos (answers may then end early)",
    )
    p.add_argument("--concurrency", type=_levels, default=[1], help="levels, e.g. 1,8")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--requests", type=int, help="requests per level (default 32)")
    size.add_argument("--duration", type=float, help="seconds per level instead")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--request-rate", type=float, help="requests/s (Poisson); default: no pacing")
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--stall-timeout", type=float, default=60.0, help="seconds without data")
    p.add_argument("--api-key", help="bearer token (default: $OPENAI_API_KEY)")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def settings_from_args(args: argparse.Namespace, url: str) -> RunSettings:
    """RunSettings from `add_run_arguments`' options (ValueError: what is wrong)."""
    return RunSettings(
        url=url,
        endpoint=args.endpoint,
        model=args.model,
        prompts=args.prompts,
        seed=args.seed,
        max_tokens=args.max_tokens,
        ignore_eos=args.ignore_eos,
        concurrency=list(args.concurrency),
        num_requests=None if args.duration else (args.requests or 32),
        duration_s=args.duration,
        warmup=args.warmup,
        request_rate=args.request_rate,
        repeats=args.repeats,
        stall_timeout_s=args.stall_timeout,
        api_key=args.api_key or _env_key(),
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m servebench",
        description="Streaming benchmark for OpenAI-compatible servers (vLLM's definitions).",
    )
    p.add_argument("url", nargs="?", help="server base URL, e.g. http://127.0.0.1:8000")
    add_run_arguments(p)
    p.add_argument("--output", type=Path, help="also write the JSON result to this file")
    p.add_argument(
        "--import-vllm",
        type=Path,
        metavar="FILE",
        help="import a `vllm bench serve --save-result` file instead of measuring",
    )
    p.add_argument(
        "--baseline",
        type=Path,
        metavar="FILE",
        help="a servebench JSON result to compare with (the regression gate)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        default=DEFAULT_THRESHOLD_PCT,
        help="gate threshold in percent (default 5)",
    )
    return p


def _measure(args: argparse.Namespace, parser: argparse.ArgumentParser) -> BenchResult:
    if args.import_vllm:
        return load_vllm_result(args.import_vllm)
    if not args.url:
        parser.error("a server URL is needed (or --import-vllm FILE)")
    settings = settings_from_args(args, args.url)
    return run_sync(settings, None if args.quiet else ProgressBar())


def _env_key() -> str | None:
    return os.environ.get("OPENAI_API_KEY") or None


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = _measure(args, parser)
        baseline = None
        if args.baseline:
            baseline = BenchResult.from_dict(json.loads(args.baseline.read_text()))
    except (BenchError, VllmResultError, ValueError, OSError) as exc:
        print(f"servebench: error: {exc}", file=sys.stderr)
        return 2
    data = result.to_dict()
    verdict = None
    if baseline is not None:
        try:
            verdict = gate(baseline, result, args.threshold)
        except ValueError as exc:
            print(f"servebench: cannot compare with {args.baseline}: {exc}", file=sys.stderr)
            return 2
        data["gate"] = verdict.to_dict()
    if args.output:
        args.output.write_text(json.dumps(data, indent=1) + "\n")
    if args.json:
        print(json.dumps(data, indent=1))
    else:
        print(format_table(result))
        if verdict is not None:
            print(format_gate(verdict))
    if verdict is not None and verdict.verdict == REGRESSED:
        return 3
    return 1 if result.incomplete else 0
