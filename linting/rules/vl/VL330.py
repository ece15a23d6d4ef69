from __future__ import annotations

import json
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._commands import problems
from linting.rules.vl._messages import AT_PARSE, vllm_label
from linting.vllm.invocation import (
    ArgProblemKind,
    load_json,
    point,
)


@rule("VL330", Severity.ERROR)
def invalid_json_argument(ctx: UnitContext) -> Iterator[Hit]:
    """
    A JSON-typed option (other than --speculative-config, see VL301) whose value is not
    valid JSON.

    What it does:
    Runs `json.loads` on values of JSON options such as `--compilation-config` or
    `--hf-overrides` that start with `{` or `[`.

    Why is this bad?
    argparse converts them with `json.loads`; invalid JSON exits with "Value … cannot be
    converted" before anything is loaded.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --compilation-config '{"level": 3,}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --compilation-config '{"level": 3}'
    ```
    """
    for vc, problem in problems(ctx, ArgProblemKind.INVALID_JSON):
        option = problem.option
        if option is None or option.dest == "speculative_config":
            continue  # VL301
        try:
            load_json(problem.text.text)  # deep nesting: an error, not a crash
            continue
        except json.JSONDecodeError as exc:
            yield Hit(
                point(problem.text, exc.pos),
                f"{vllm_label(vc.args.catalog)} refuses to start {AT_PARSE}: {option.key.text} is not "
                f'valid JSON ("{exc.msg}" at character {exc.pos + 1})',
                path=vc.path,
            )
