"""The table of rule codes: every code the linter has ever had, its family, the module that
holds its check, and its status. One table, as ruff's `crates/ruff_linter/src/codes.rs`
keeps one, so that a family never lists its rules twice and a code is never reused.

- `stable`: on by default.
- `preview`: a new rule whose findings may still change; on only with `--preview` or when
  `--select` names its code exactly (ruff's preview rules behave so).
- `removed`: retired. Its row stays so the code is never given to another rule; its module
  is gone, `--select`/`--ignore` of it is refused with a message saying so.

`linting.rules` imports the module of every code that is not removed (that registers the
check); `linting.rules.registry` refuses a rule whose code or module is not in this table.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass


class Status(enum.Enum):
    STABLE = "stable"
    PREVIEW = "preview"
    REMOVED = "removed"

    def __str__(self) -> str:
        return self.value


STABLE, PREVIEW, REMOVED = Status.STABLE, Status.PREVIEW, Status.REMOVED


@dataclass(frozen=True)
class RuleCode:
    code: str
    family: str
    module: str  # under linting.rules; "" for a removed code
    status: Status

    @property
    def import_path(self) -> str:
        return f"linting.rules.{self.module}"


RULE_CODES: tuple[RuleCode, ...] = (
    # SD
    RuleCode("SD101", "SD", "sd.SD101", STABLE),
    RuleCode("SD102", "SD", "sd.SD102", STABLE),
    RuleCode("SD103", "SD", "sd.SD103", STABLE),
    RuleCode("SD104", "SD", "sd.SD104", STABLE),
    RuleCode("SD105", "SD", "sd.SD105", STABLE),
    RuleCode("SD106", "SD", "sd.SD106", STABLE),
    RuleCode("SD107", "SD", "sd.SD107", STABLE),
    RuleCode("SD108", "SD", "sd.SD108", STABLE),
    RuleCode("SD109", "SD", "sd.SD109", STABLE),
    RuleCode("SD110", "SD", "sd.SD110", STABLE),
    RuleCode("SD111", "SD", "sd.SD111", STABLE),
    RuleCode("SD112", "SD", "sd.SD112", STABLE),
    RuleCode("SD113", "SD", "sd.SD113", STABLE),
    RuleCode("SD114", "SD", "sd.SD114", STABLE),
    RuleCode("SD115", "SD", "sd.SD115", STABLE),
    RuleCode("SD116", "SD", "sd.SD116", STABLE),
    RuleCode("SD117", "SD", "sd.SD117", STABLE),
    RuleCode("SD118", "SD", "sd.SD118", STABLE),
    # EX
    RuleCode("EX201", "EX", "ex.EX201", STABLE),
    RuleCode("EX202", "EX", "ex.EX202", STABLE),
    RuleCode("EX203", "EX", "ex.EX203", STABLE),
    RuleCode("EX204", "EX", "ex.EX204", STABLE),
    RuleCode("EX205", "EX", "ex.EX205", STABLE),
    RuleCode("EX206", "EX", "ex.EX206", STABLE),
    RuleCode("EX207", "EX", "ex.EX207", STABLE),
    RuleCode("EX208", "EX", "ex.EX208", STABLE),
    RuleCode("EX209", "EX", "ex.EX209", STABLE),
    RuleCode("EX210", "EX", "ex.EX210", STABLE),
    # VL
    RuleCode("VL301", "VL", "vl.VL301", STABLE),
    RuleCode("VL302", "VL", "vl.VL302", STABLE),
    RuleCode("VL303", "VL", "vl.VL303", STABLE),
    RuleCode("VL304", "VL", "vl.VL304", STABLE),
    RuleCode("VL305", "VL", "vl.VL305", STABLE),
    RuleCode("VL306", "VL", "vl.VL306", STABLE),
    RuleCode("VL307", "VL", "vl.VL307", STABLE),
    RuleCode("VL308", "VL", "vl.VL308", STABLE),
    RuleCode("VL309", "VL", "vl.VL309", STABLE),
    RuleCode("VL320", "VL", "vl.VL320", STABLE),
    RuleCode("VL321", "VL", "vl.VL321", STABLE),
    RuleCode("VL322", "VL", "vl.VL322", STABLE),
    RuleCode("VL323", "VL", "vl.VL323", STABLE),
    RuleCode("VL324", "VL", "vl.VL324", STABLE),
    RuleCode("VL325", "VL", "vl.VL325", STABLE),
    RuleCode("VL326", "VL", "vl.VL326", STABLE),
    RuleCode("VL327", "VL", "vl.VL327", STABLE),
    RuleCode("VL328", "VL", "vl.VL328", STABLE),
    RuleCode("VL330", "VL", "vl.VL330", STABLE),
    RuleCode("VL331", "VL", "vl.VL331", STABLE),
    RuleCode("VL332", "VL", "vl.VL332", STABLE),
    RuleCode("VL333", "VL", "vl.VL333", STABLE),
    # OP
    RuleCode("OP401", "OP", "op.OP401", STABLE),
    RuleCode("OP402", "OP", "op.OP402", STABLE),
    RuleCode("OP403", "OP", "op.OP403", STABLE),
    RuleCode("OP404", "OP", "op.OP404", STABLE),
    RuleCode("OP405", "OP", "op.OP405", STABLE),
    RuleCode("OP406", "OP", "op.OP406", STABLE),
    RuleCode("OP407", "OP", "op.OP407", STABLE),
    RuleCode("OP408", "OP", "op.OP408", STABLE),
    RuleCode("OP409", "OP", "op.OP409", STABLE),
    RuleCode("OP410", "OP", "op.OP410", STABLE),
    RuleCode("OP411", "OP", "op.OP411", STABLE),
    RuleCode("OP412", "OP", "op.OP412", STABLE),
    RuleCode("OP413", "OP", "op.OP413", STABLE),
    RuleCode("OP414", "OP", "op.OP414", STABLE),
    RuleCode("OP415", "OP", "op.OP415", STABLE),
    RuleCode("OP416", "OP", "op.OP416", STABLE),
    RuleCode("OP417", "OP", "op.OP417", STABLE),
    # SC
    RuleCode("SC", "SC", "sc.SC", STABLE),
)

CODES: dict[str, RuleCode] = {row.code: row for row in RULE_CODES}


def _check(rows: tuple[RuleCode, ...]) -> None:
    """The table's own invariants, checked at import: a code appears once, its family is
    its prefix, and a live code's module is named after it in its family's package."""
    seen: set[str] = set()
    for row in rows:
        if row.code in seen:
            raise ValueError(f"rule code {row.code} appears twice in the code table")
        seen.add(row.code)
        prefix = re.match(r"[A-Z]+", row.code)
        if prefix is None or prefix.group(0) != row.family:
            raise ValueError(f"rule code {row.code} is not in family {row.family}")
        if row.status is not REMOVED and row.module != f"{row.family.lower()}.{row.code}":
            raise ValueError(f"rule {row.code} must live in linting/rules/{row.family.lower()}/")


_check(RULE_CODES)
