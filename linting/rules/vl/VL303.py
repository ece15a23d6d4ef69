from __future__ import annotations

import difflib
from collections.abc import Iterator

from linting.context import UnitContext
from linting.findings import Hit, Severity
from linting.rules.registry import rule
from linting.rules.vl._messages import AT_ENGINE, vllm_label
from linting.rules.vl._spec import spec_data
from linting.vllm.catalog import available_versions, load_catalog


def _versions_accepting(method: str) -> list[str]:
    found = []
    for version in available_versions():
        if method in load_catalog(version).speculative_config.methods_accepted:
            found.append(version)
    return found


def _ranges(versions: list[str]) -> str:
    """`0.8.5 to 0.10.2, 0.16.0 to 0.33.0`: runs of consecutive catalogs."""
    catalogs = available_versions()
    runs: list[list[str]] = []
    for version in versions:
        if runs and catalogs.index(version) == catalogs.index(runs[-1][-1]) + 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(r[0] if len(r) == 1 else f"{r[0]} to {r[-1]}" for r in runs)


@rule("VL303", Severity.ERROR)
def speculative_method_unsupported(ctx: UnitContext) -> Iterator[Hit]:
    """
    A speculative decoding `method` that the target vLLM version does not accept.

    What it does:
    Checks `method` (from `--speculative-config`, `--speculative-config.method` or 0.33's
    `--spec-method`) against the methods the version accepts, and names the versions that
    do accept it.

    Why is this bad?
    From 0.11 SpeculativeConfig is a pydantic dataclass that validates `method` against a
    `Literal` and refuses to start at engine start. Methods come and go: `eagle3` already
    works in 0.8.5 (its code handles it although the type hint omits it), `suffix` arrives
    in 0.14, and 0.33 drops `medusa` and `mlp_speculator`.

    Example:
    ```ini
    # with vLLM 0.33
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "medusa", "model": "/models/medusa", "num_speculative_tokens": 3}'
    ```

    Use instead:
    ```ini
    ExecStart=/opt/vllm/bin/vllm serve /models/m --speculative-config '{"method": "eagle3", "model": "/models/eagle3", "num_speculative_tokens": 3}'
    ```
    """
    for vc in ctx.vllm_commands:
        view = vc.args.spec_view
        if view is None or "method" not in view.entries:
            continue
        entry = view.entries["method"]
        method = entry.value
        catalog = vc.args.catalog
        accepted = catalog.speculative_config.methods_accepted
        if method is None or not isinstance(method, str) or method in accepted:
            continue
        if entry.origin == "shorthand" and catalog.flag("--spec-method"):
            spec = catalog.flag("--spec-method")
            if spec is not None and spec.choices:
                continue  # argparse choices: reported by VL321
        others = _versions_accepting(method)
        if others:
            also = f"; accepted by vLLM {_ranges(others)}"
        else:
            also = "; no known vLLM version accepts it"
        close = difflib.get_close_matches(method, accepted, n=1, cutoff=0.6)
        did_you_mean = f"; did you mean `{close[0]}`?" if close else ""
        if catalog.speculative_config.unknown_keys == "type_error":
            what = (
                f"{vllm_label(catalog)} has no speculative method {method!r}: it fails {AT_ENGINE}"
            )
        else:
            what = (
                f"{vllm_label(catalog)} refuses to start {AT_ENGINE}: pydantic rejects method "
                f"{method!r} (not one of its {len(accepted)} methods)"
            )
        yield Hit(
            entry.value_text.span(),
            what + also + did_you_mean,
            {
                **spec_data(view),
                "method": method,
                "accepted_by": others,
                "methods_accepted": list(accepted),
            },
            path=vc.path,
        )
