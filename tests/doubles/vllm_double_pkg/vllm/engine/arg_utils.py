"""TEST DOUBLE: `AsyncEngineArgs.from_cli_args` keeps what the preflight check reads."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Any


@dataclass
class AsyncEngineArgs:
    model: str | None = None
    speculative_config: dict[str, Any] | None = None

    @classmethod
    def from_cli_args(cls, args: argparse.Namespace) -> AsyncEngineArgs:
        return cls(
            model=getattr(args, "model", None) or getattr(args, "model_tag", None),
            speculative_config=getattr(args, "speculative_config", None),
        )
