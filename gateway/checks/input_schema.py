"""Check 4, input schema: arguments must match the tool's JSON Schema, exactly as given."""

from __future__ import annotations

import json
from typing import Any

from jsonschema.protocols import Validator

from bus.json_values import is_object
from gateway.checks.schema_errors import describe_errors
from gateway.errors import SchemaInvalid


def parse_args(raw: Any) -> dict[str, Any]:
    """The call's arguments as a dict; JSON text is decoded, anything else must be an object.

    Raises:
        SchemaInvalid: the text is not JSON, or the value is not a JSON object.
    """
    if isinstance(raw, str | bytes):
        try:
            raw = json.loads(raw or "{}")
        except ValueError as e:
            raise SchemaInvalid(f"arguments are not valid JSON: {e}") from e
    if not is_object(raw):
        kind = "array" if isinstance(raw, list) else type(raw).__name__
        raise SchemaInvalid(f"arguments must be a JSON object, got {kind}")
    return raw


def check_input(validator: Validator, args: dict[str, Any]) -> None:
    """Validate `args` with Draft 2020-12 (formats checked); nothing is coerced or clamped.

    The tool receives exactly what was validated: a value out of range is an error the
    model must fix, never a value quietly moved into range.

    Raises:
        SchemaInvalid: naming each offending field and what is wrong with it.
    """
    problems = describe_errors(validator.iter_errors(args))
    if problems:
        raise SchemaInvalid(f"invalid arguments: {problems}")
