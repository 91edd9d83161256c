"""Check 7, output schema: a tool's result must match what it declared."""

from __future__ import annotations

from typing import Any

from jsonschema.protocols import Validator

from bus.json_values import is_object
from gateway.checks.schema_errors import describe_errors
from gateway.errors import OutputInvalid


def check_output(validator: Validator, result: Any, tool: str) -> None:
    """Validate the result; a mismatch is a tool bug, reported without the bad data.

    Raises:
        OutputInvalid: the result is not an object or breaks the output schema.
    """
    if not is_object(result):
        raise OutputInvalid(f"the tool {tool!r} returned {type(result).__name__}, not an object")
    problems = describe_errors(validator.iter_errors(result))
    if problems:
        raise OutputInvalid(f"the tool {tool!r} returned an invalid result: {problems}")
