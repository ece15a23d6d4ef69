"""Runtime value sets that argparse does not enforce (e.g. quantization methods)."""

from __future__ import annotations

from typing import Any

from tools.vllm_catalog.module_index import ModuleIndex
from tools.vllm_catalog.type_hints import TypeEvaluator, union_members


def runtime_choices(
    index: ModuleIndex, types: TypeEvaluator, flags: list[dict[str, Any]]
) -> dict[str, Any]:
    """Values checked after parsing (at engine start), e.g. --quantization."""
    out: dict[str, Any] = {}
    mod = "vllm.model_executor.layers.quantization"
    binding = index.lookup(mod, "QuantizationMethods")
    if binding.kind == "value":
        hint = types.eval(binding.node, binding.module)
        values = [v for m in union_members(hint) if m.kind == "literal" for v in m.args]
        flag = next((f for f in flags if f["dest"] == "quantization"), None)
        if flag is not None:
            out["quantization"] = {
                "values": values,
                "enforced_by_argparse": flag["choices"] is not None,
                "source": f"{index.path_of(binding.module)}:{binding.node.lineno}",
                "note": (
                    "QUANTIZATION_METHODS = list(get_args(QuantizationMethods)); "
                    "plugins may register more at runtime"
                ),
            }
    return out
