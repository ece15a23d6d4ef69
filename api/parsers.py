"""DRF's JSON parser, but a body nested too deep for Python's decoder is a 400 like any
other malformed JSON (the decoder raises RecursionError, which DRF does not catch)."""

from __future__ import annotations

from typing import Any

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class BoundedJSONParser(JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        try:
            return super().parse(stream, media_type, parser_context)
        except RecursionError as exc:
            raise ParseError("JSON parse error: nested too deep.") from exc
