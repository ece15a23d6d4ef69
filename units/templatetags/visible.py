"""`{{ text|visible }}`: HTML-escaped text with every hidden character (controls, bidi and
zero-width characters, line/paragraph separators) shown as a marker that names it
(`units.unicode_text`). For anything a person must read exactly as it runs: unit lines,
diffs, a unit read from a host."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from units.unicode_text import visible_html

register = template.Library()


@register.filter(is_safe=True)
def visible(value: Any) -> SafeString:
    return visible_html("" if value is None else str(value))
