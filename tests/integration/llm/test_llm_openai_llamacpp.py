"""The OpenAI-compatible adapter against a real llama.cpp server (the one xllamacpp embeds).

Slow: it loads the local model. Tool calls are not asserted here: over the plain OpenAI
protocol the 0.5B model writes its tool call as text instead of the tagged form llama.cpp
parses, which is why the local adapter uses schema-constrained tool choice instead.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from pydantic import SecretStr

from agents.errors import LLMAuthError
from agents.llm.openai_compat import OpenAICompatConfig, OpenAICompatLLM
from agents.llm.ports import ChatMessage, LLMOptions, TextDelta, Usage
from agents.llm.weights import QWEN25_CODER_05B
from tests.contracts.llm import ANSWER_SCHEMA, joined, run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

KEY = secrets.token_urlsafe(16)


@pytest.fixture(scope="module")
def llama_server(local_model_dir: Path) -> Iterator[Any]:
    import xllamacpp

    xlc: Any = xllamacpp  # a compiled module without type stubs
    params = xlc.CommonParams()
    params.model.path = str(local_model_dir / QWEN25_CODER_05B.filename)
    params.n_ctx = 2048
    params.verbosity = -1
    params.api_keys = [KEY]
    server = xlc.Server(params)
    yield server
    del server


@pytest.fixture
async def llm(llama_server: Any) -> AsyncIterator[OpenAICompatLLM]:
    config = OpenAICompatConfig(
        base_url=f"{llama_server.listening_address}/v1", api_key=SecretStr(KEY), model="qwen"
    )
    async with OpenAICompatLLM(config) as adapter:
        yield adapter


async def test_text_streams_with_usage(llm: OpenAICompatLLM) -> None:
    events = await run(llm, [ChatMessage.user("What is the capital of France?")])
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1
    assert "Paris" in joined(events, TextDelta)
    usage = events[-1]
    assert isinstance(usage, Usage) and usage.prompt_tokens > 0 and usage.completion_tokens > 0


async def test_response_schema_is_enforced_by_the_server(llm: OpenAICompatLLM) -> None:
    options = LLMOptions(response_schema=ANSWER_SCHEMA, temperature=0)
    events = await run(llm, [ChatMessage.user("What is 23 × 19? Reply as JSON.")], (), options)
    jsonschema.validate(json.loads(joined(events, TextDelta)), ANSWER_SCHEMA)


async def test_max_tokens_reaches_the_server(llm: OpenAICompatLLM) -> None:
    events = await run(llm, [ChatMessage.user("Count to fifty.")], (), LLMOptions(max_tokens=4))
    usage = events[-1]
    assert isinstance(usage, Usage) and usage.completion_tokens <= 4


async def test_a_wrong_key_is_an_auth_error(llama_server: Any) -> None:
    config = OpenAICompatConfig(
        base_url=f"{llama_server.listening_address}/v1", api_key=SecretStr("wrong"), model="q"
    )
    async with OpenAICompatLLM(config) as llm:
        with pytest.raises(LLMAuthError):
            await run(llm, [ChatMessage.user("hi")])
