"""The vLLM commands of a unit as the VL rules walk them."""

from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.servers import VllmCommand
from linting.spans import Span
from linting.vllm.invocation import ArgProblem, ArgProblemKind


def problems(ctx: UnitContext, *kinds: ArgProblemKind) -> Iterator[tuple[VllmCommand, ArgProblem]]:
    """Every argument problem of one of `kinds`, with the command it belongs to."""
    for vc in ctx.vllm_commands:
        for problem in vc.args.problems:
            if problem.kind in kinds:
                yield vc, problem


def command_span(vc: VllmCommand) -> Span:
    """From the executable to the last word before the vLLM arguments (`vllm serve`)."""
    start = vc.args.argv[0].span()
    end = vc.args.argv[max(vc.args.invocation.args_start - 1, 0)].span()
    return start.union(end)
