"""The scripted model's structured answers: a small JSON document shaped by a JSON Schema.

As pydantic-ai's ``TestModel`` builds its output from the output type, the benchmark turn
answers a researcher call that carries a ``response_schema`` with :func:`example_of` it:
objects with their required properties (a schema-free object gets ``answer``), arrays at
their least length, the benchmark's figure for numbers and text, ``const``, the first
``enum`` value and the first ``anyOf``/``oneOf`` branch. A constraint it does not read (a
``pattern``, a ``$ref``) may go unmet: the caller's own validation then refuses the answer,
as it would a real model's.
"""

from __future__ import annotations

from typing import Any

from bus.json_values import is_array, is_object

#: The figure the benchmark answers with (23 × 19).
FIGURE = 437
_DEPTH = 8


def example_of(schema: object, answer: str, depth: int = 0) -> Any:
    """A value valid against ``schema`` as far as its plain keywords go; ``answer`` is the
    text of a string and of a free object's ``answer``."""
    if not is_object(schema) or depth > _DEPTH:
        return {"answer": answer}
    if "const" in schema:
        return schema["const"]
    enum = schema.get("enum")
    if is_array(enum) and enum:
        return enum[0]
    for branches in (schema.get("anyOf"), schema.get("oneOf")):
        if is_array(branches) and branches:
            return example_of(branches[0], answer, depth + 1)
    kind = schema.get("type", "object")
    if is_array(kind):
        kind = kind[0] if kind else "object"
    match kind:
        case "array":
            least = schema.get("minItems")
            count = least if isinstance(least, int) and least > 0 else 1
            return [example_of(schema.get("items", {}), answer, depth + 1)] * count
        case "string":
            return answer
        case "integer" | "number":
            return _within(schema, FIGURE)
        case "boolean":
            return True
        case "null":
            return None
        case _:
            return _object(schema, answer, depth)


def _object(schema: dict[str, Any], answer: str, depth: int) -> dict[str, Any]:
    properties = schema.get("properties")
    required = schema.get("required")
    if not is_object(properties) or not properties:
        return {} if schema.get("additionalProperties") is False else {"answer": answer}
    names = [n for n in required if isinstance(n, str)] if is_array(required) else []
    return {n: example_of(properties.get(n, {}), answer, depth + 1) for n in names}


def _within(schema: dict[str, Any], value: int) -> int:
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and value < low:
        value = int(low) + (0 if int(low) == low else 1)
    if isinstance(high, int | float) and value > high:
        value = int(high)
    return value
