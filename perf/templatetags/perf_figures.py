"""Template tags for the comparison tables: a level's figure by key, and its change
against the reference in words ("+4.2%", worse or better as the metric reads)."""

from __future__ import annotations

from dataclasses import dataclass

from django import template

from perf.comparison import ComparedRun, LevelFigures
from servebench.names import METRIC_NAMES

register = template.Library()


@dataclass(frozen=True)
class Change:
    text: str
    worse: bool
    better: bool


@register.simple_tag
def figure(level: LevelFigures, key: str) -> float | None:
    return level.figures.get(key)


@register.simple_tag
def change(item: ComparedRun, level: LevelFigures, key: str) -> Change | None:
    """The change against the reference at this level; None for the reference itself."""
    moved = item.change(level.concurrency, key)
    if moved is None or item.is_reference:
        return None
    known = METRIC_NAMES.get(key)
    higher = known.higher_is_better if known else True
    worse = moved < 0 if higher else moved > 0
    return Change(f"{moved:+.1f}%", worse=worse and abs(moved) >= 0.05, better=not worse)
