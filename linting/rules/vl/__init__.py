"""VL: what `vllm serve` does with the arguments a unit gives it, per vLLM version.

Each check reads the argv the program actually receives (after systemd's unquoting and
`$` substitution), parsed against the generated catalog of the target vLLM version
(`--vllm-version`), and says whether vLLM exits at argument parsing, fails at engine
start, or silently runs something other than what was written.

Importing this package registers its rules; one module per rule, named after its code.
"""

from linting.rules.vl import (
    VL301,
    VL302,
    VL303,
    VL304,
    VL305,
    VL306,
    VL307,
    VL308,
    VL309,
    VL320,
    VL321,
    VL322,
    VL323,
    VL324,
    VL325,
    VL326,
    VL327,
    VL328,
    VL330,
    VL331,
    VL332,
)

__all__ = [
    "VL301",
    "VL302",
    "VL303",
    "VL304",
    "VL305",
    "VL306",
    "VL307",
    "VL308",
    "VL309",
    "VL320",
    "VL321",
    "VL322",
    "VL323",
    "VL324",
    "VL325",
    "VL326",
    "VL327",
    "VL328",
    "VL330",
    "VL331",
    "VL332",
]
