"""The scripted model answers a call under a JSON Schema with a document valid against it."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from agents.llm.ports import ChatMessage, LLMOptions, TextDelta
from agents.llm.scripted import BENCHMARK_ANSWER, ScriptedLLM

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object"},
    {},
    {
        "type": "object",
        "properties": {
            "product": {"type": "integer", "minimum": 1000},
            "factors": {"type": "array", "items": {"type": "number"}, "minItems": 2},
            "unit": {"enum": ["none", "kg"]},
            "exact": {"type": ["boolean", "null"]},
            "source": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "kind": {"const": "product"},
            "nested": {"type": "object", "properties": {}, "additionalProperties": False},
        },
        "required": ["product", "factors", "unit", "exact", "source", "kind", "nested"],
        "additionalProperties": False,
    },
    {"type": "array", "items": {"type": "string"}},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: json.dumps(s)[:40])
async def test_an_answer_under_a_schema_is_a_document_valid_against_it(
    schema: dict[str, Any],
) -> None:
    llm = ScriptedLLM()
    asked = [ChatMessage.user("What is 23 × 19?")]
    events = [e async for e in llm.stream(asked, (), LLMOptions(response_schema=schema))]
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))

    jsonschema.validate(json.loads(answer), schema)


async def test_a_free_object_carries_the_benchmark_answer() -> None:
    llm = ScriptedLLM()
    asked = [ChatMessage.user("What is 23 × 19?")]
    options = LLMOptions(response_schema={"type": "object"})
    events = [e async for e in llm.stream(asked, (), options)]

    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert json.loads(answer) == {"answer": BENCHMARK_ANSWER}
