"""What a completion may ask for beside its question (``n``, ``functions``, ``response_format``;
the client's ``tools``: test_client_tools.py),
driven by the official `openai` package against a real API with the scripted model."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import jsonschema
import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam
from openai.types.chat.completion_create_params import Function
from openai.types.shared_params import (
    ResponseFormatJSONObject,
    ResponseFormatJSONSchema,
)

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, text, tool_call, turn

QUESTION: list[ChatCompletionMessageParam] = [{"role": "user", "content": "What is 23 × 19?"}]
PRODUCT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "product": {"type": "integer"},
        "factors": {"type": "array", "items": {"type": "integer"}, "minItems": 2},
        "note": {"type": "string"},
    },
    "required": ["product", "factors", "note"],
    "additionalProperties": False,
}
JSON_SCHEMA: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {"name": "product", "schema": PRODUCT, "strict": True},
}


class Recorder:
    """A researcher that computes with the calculator, then answers as it was asked: the
    document when the call carries a schema (``comply``), else prose; it keeps each
    call's schema."""

    def __init__(self, comply: bool = True) -> None:
        self.schemas: list[dict[str, Any] | None] = []
        self._comply = comply

    def __call__(
        self, messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        self.schemas.append(options.response_schema)
        if messages[-1].role != "tool":
            return turn(tool_call("calculator", {"expression": "23*19"}))
        if options.response_schema is not None and self._comply:
            # "[7]" is data: nothing may take it for an invented citation and strip it.
            return turn(text('{"product": 437, "factors": [23, 19], "note": "exact [7]"}'))
        return turn(text("23 × 19 is 437."))


def client(api: Any, key: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=key, max_retries=0)


async def runs_of(api: Any, key: str) -> list[Any]:
    listed = await api.http.get("/api/v1/runs", headers=api.auth(key))
    return listed.json()["runs"]


async def test_n_above_one_and_legacy_functions_are_refused_naming_the_field(
    start_api: Any,
) -> None:
    api = await start_api()
    key = await api.key()
    lookup: Function = {"name": "lookup", "parameters": {"type": "object"}}
    async with client(api, key) as oai:
        with pytest.raises(openai.BadRequestError) as two:
            await oai.chat.completions.create(model="agentbus", messages=QUESTION, n=2)
        with pytest.raises(openai.BadRequestError) as functions:
            await oai.chat.completions.create(
                model="agentbus", messages=QUESTION, functions=[lookup]
            )
        one = await oai.chat.completions.create(model="agentbus", messages=QUESTION, n=1)

    assert two.value.status_code == 400 and two.value.param == "n"
    assert "n must be 1" in two.value.message
    assert functions.value.param == "functions"
    assert one.choices[0].message.content  # n=1 is the default, and answered
    assert len(await runs_of(api, key)) == 1  # the refused requests started nothing


async def test_a_json_schema_answer_is_a_document_valid_against_it(start_api: Any) -> None:
    model = Recorder()
    api = await start_api(ScriptedLLM(model))
    key = await api.key()
    async with client(api, key) as oai:
        plain = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, response_format=JSON_SCHEMA
        )
        stream = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, response_format=JSON_SCHEMA, stream=True
        )
        chunks = [c async for c in stream]
        any_object = await oai.chat.completions.create(
            model="agentbus",
            messages=QUESTION,
            response_format=ResponseFormatJSONObject(type="json_object"),
        )

    document = json.loads(plain.choices[0].message.content or "")
    jsonschema.validate(document, PRODUCT)
    assert document == {"product": 437, "factors": [23, 19], "note": "exact [7]"}
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert json.loads(streamed) == document
    assert json.loads(any_object.choices[0].message.content or "")["product"] == 437
    # The schema reached the model on every researcher call of those runs.
    assert model.schemas == [PRODUCT] * 4 + [{"type": "object"}] * 2
    run_id = plain.id.removeprefix("chatcmpl-")
    stored = (await api.http.get(f"/api/v1/runs/{run_id}", headers=api.auth(key))).json()
    assert stored["answer"] == plain.choices[0].message.content  # the store keeps the document


async def test_a_model_that_cannot_comply_ends_with_an_error_not_prose(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(Recorder(comply=False)))
    key = await api.key()
    async with client(api, key) as oai:
        with pytest.raises(openai.InternalServerError) as whole:
            await oai.chat.completions.create(
                model="agentbus", messages=QUESTION, response_format=JSON_SCHEMA
            )
        stream = await oai.chat.completions.create(
            model="agentbus", messages=QUESTION, response_format=JSON_SCHEMA, stream=True
        )
        content: list[str] = []
        with pytest.raises(openai.APIError) as streamed:
            async for chunk in stream:
                content += [c.delta.content or "" for c in chunk.choices]
        with pytest.raises(openai.BadRequestError) as no_schema:
            await oai.chat.completions.create(
                model="agentbus",
                messages=QUESTION,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": 3}},
                },
            )

    assert whole.value.code == "response_format_unmet" and whole.value.param == "response_format"
    assert "is not JSON" in whole.value.message
    assert whole.value.response.headers["x-should-retry"] == "false"
    assert "".join(content) == ""  # not one word of the prose
    assert "does not follow response_format" in streamed.value.message
    assert no_schema.value.param == "response_format.json_schema.schema"


async def test_the_benchmark_model_answers_a_schema_with_a_valid_document(
    start_api: Any,
) -> None:
    api = await start_api()  # the scripted model's benchmark turn
    key = await api.key()
    async with client(api, key) as oai:
        shaped = await oai.chat.completions.create(
            model="agentbus-multi", messages=QUESTION, response_format=JSON_SCHEMA
        )

    document = json.loads(shaped.choices[0].message.content or "")
    jsonschema.validate(document, PRODUCT)
    assert document["product"] == 437


async def test_a_document_shaped_like_a_tools_result_is_still_the_answer(
    start_api: Any,
) -> None:
    def echo(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ) -> Turn:
        if messages[-1].role != "tool":
            return turn(tool_call("calculator", {"expression": "23*19"}))
        return turn(text(messages[-1].content))  # the tool's JSON, as the document

    api = await start_api(ScriptedLLM(echo))
    key = await api.key()
    async with client(api, key) as oai:
        shaped = await oai.chat.completions.create(
            model="agentbus",
            messages=QUESTION,
            response_format=ResponseFormatJSONObject(type="json_object"),
        )

    # In prose a tool's raw output is no answer; asked for a document, the schema decides.
    assert "437" in json.dumps(json.loads(shaped.choices[0].message.content or ""))
