from __future__ import annotations

from collections.abc import Iterator

from linting.context import UnitContext
from linting.execline.env_substitution import displayed
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import shown, vllm_label


@rule("VL309", Severity.ERROR)
def speculative_config_overridden(ctx: UnitContext) -> Iterator[Hit]:
    """
    A `--speculative-config` that a later one (or the dotted form) replaces entirely.

    What it does:
    Finds several `--speculative-config` values in one command, including
    `--speculative-config.KEY VALUE` next to a JSON `--speculative-config`.

    Why is this bad?
    argparse keeps only the last value; the values are not merged. From 0.11 the dotted
    keys are folded into one JSON argument appended at the END of argv
    (FlexibleArgumentParser.parse_args, vllm/utils/argparse_utils.py:497 in 0.33.0), so
    `--speculative-config.num_speculative_tokens 3` silently discards a JSON config
    written before or after it.

    Example:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "prompt_lookup_max": 4}' --speculative-config.num_speculative_tokens 5
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "ngram", "prompt_lookup_max": 4, "num_speculative_tokens": 5}'
    ```
    """
    for vc in ctx.vllm_commands:
        sources = vc.args.speculative_sources
        if len(sources) < 2:
            continue
        winner = sources[-1]
        kept = (
            "the dotted --speculative-config.* keys"
            if winner.kind == "dotted"
            else ("the last --speculative-config")
        )
        used = winner.as_dict
        if winner.unknown and winner.option is not None and winner.option.value is not None:
            used_text = displayed(winner.option.value.text)  # from an unread variable
        else:
            used_text = shown(used)
        for source in sources[:-1]:
            if source.option is None or source.option.value is None:
                continue
            yield Hit(
                source.option.span(),
                f"{vllm_label(vc.args.catalog)} ignores this --speculative-config: argparse keeps only "
                f"{kept} ({used_text}); values are not merged",
                {"ignored": source.as_dict, "used": winner.as_dict},
                path=vc.path,
            )
