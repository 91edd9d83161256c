"""Turn jsonschema errors into short messages that name the field and what is wrong."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import ValidationError

from bus.json_values import is_array, is_object

_MAX_REPORTED = 5
_JSON_TYPES: dict[type[object], str] = {
    dict: "object",
    list: "array",
    str: "string",
    bool: "boolean",
    int: "integer",
    float: "number",
    type(None): "null",
}


def _type_name(value: object) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _size(value: object) -> int | None:
    # The length of a JSON string, array or object (None for any other value).
    if isinstance(value, str) or is_array(value) or is_object(value):
        return len(value)
    return None


def _items(value: object) -> list[Any]:
    # The items of a JSON array (a keyword's value in the schema); none for anything else.
    return value if is_array(value) else []


def _short(text: str, limit: int = 160) -> str:
    # Messages go back to the model: never echo a megabyte of its own input.
    return text if len(text) <= limit else text[:limit] + "…"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _location(error: ValidationError) -> str:
    path = ""
    for key in error.absolute_path:
        path = _join(path, key)
    return path


def _what(error: ValidationError) -> str:
    v, got = error.validator, error.instance
    want: Any = error.validator_value
    size = _size(got)
    messages = {
        "type": lambda: (
            f"must be of type {' or '.join(_items(want)) if is_array(want) else want}"
            f" (got {_type_name(got)})"
        ),
        "enum": lambda: "must be one of " + ", ".join(json.dumps(x) for x in want),
        "const": lambda: f"must be exactly {json.dumps(want)}",
        "minimum": lambda: f"must be >= {want} (got {got})",
        "maximum": lambda: f"must be <= {want} (got {got})",
        "exclusiveMinimum": lambda: f"must be > {want} (got {got})",
        "exclusiveMaximum": lambda: f"must be < {want} (got {got})",
        "multipleOf": lambda: f"must be a multiple of {want} (got {got})",
        "minLength": lambda: f"must be at least {want} characters long (got {size})",
        "maxLength": lambda: f"must be at most {want} characters long (got {size})",
        "minItems": lambda: f"must have at least {want} items (got {size})",
        "maxItems": lambda: f"must have at most {want} items (got {size})",
        "uniqueItems": lambda: "must not contain duplicate items",
        "pattern": lambda: f"must match the pattern {want!r}",
        "format": lambda: f"must be a valid {want}",
    }
    make = messages.get(str(v))
    return make() if make else _short(error.message)


def _describe(error: ValidationError) -> list[str]:
    where = _location(error)
    got = error.instance
    want: Any = error.validator_value
    schema: Mapping[str, Any] = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "required" and is_object(got):
        return [f"{_join(where, n)}: is required" for n in want if n not in got]
    if error.validator == "additionalProperties" and is_object(got):
        known = set(schema.get("properties", {}))
        patterns = list(schema.get("patternProperties", {}))
        allowed = ", ".join(sorted(known)) or "none"
        return [
            f"{_join(where, str(k))}: is not an allowed field (allowed: {allowed})"
            for k in sorted(map(str, got))
            if k not in known and not any(re.search(p, k) for p in patterns)
        ]
    return [f"{where or 'arguments'}: {_what(error)}"]


def describe_errors(errors: Iterable[ValidationError]) -> str | None:
    """One line per problem (at most five), most shallow first; None when there are none."""
    ordered = sorted(errors, key=lambda e: (len(e.absolute_path), [str(p) for p in e.path]))
    lines: list[str] = []
    for error in ordered:
        lines.extend(_describe(error))
    if not lines:
        return None
    more = len(lines) - _MAX_REPORTED
    shown = lines[:_MAX_REPORTED] + ([f"and {more} more"] if more > 0 else [])
    return "; ".join(_short(line, 240) for line in shown)
