"""The OpenAPI schema's error answers: every operation may answer with the API's one
error shape (api.errors), so clients and the fuzz test know every status it returns."""

from __future__ import annotations

from typing import Any

ERROR = {
    "type": "object",
    "properties": {
        "detail": {"type": "string"},
        "errors": {
            "type": "object",
            "additionalProperties": {"type": "array", "items": {"type": "string"}},
        },
    },
    "required": ["detail"],
}
_ALWAYS = {
    "401": "No or a refused credential (the reason is in detail)",
    "403": "The token's scope or the user's roles do not allow it",
    "404": "No such object",
    "405": "Not a method of this path",
    "429": "Too many calls: wait as Retry-After says",
}
_WITH_INPUT = {
    "400": "Input that is not valid, and why (per field in errors)",
    "413": "The body is larger than the limit",
}


def add_error_responses(
    result: dict[str, Any], generator: Any, request: Any, public: bool
) -> dict[str, Any]:
    """drf-spectacular postprocessing hook (SPECTACULAR_SETTINGS["POSTPROCESSING_HOOKS"])."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR
    answer = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            codes = {**_ALWAYS, **_WITH_INPUT}
            if method == "get" and not operation.get("parameters"):
                codes.pop("413")
            for code, description in codes.items():
                operation["responses"].setdefault(code, {**answer, "description": description})
    return result
