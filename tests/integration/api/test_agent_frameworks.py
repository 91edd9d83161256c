"""Agent frameworks against the OpenAI-compatible endpoint, with the scripted model behind
it: pydantic-ai with a typed output (``output_type=int``: its output tool, which the client
runs) and with a function tool, and the OpenAI Agents SDK with a function tool."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, tool_call, turn
from tests.integration.api.test_client_tools import WeatherModel
from tests.pyenv import installed

OPENAI_AGENTS = Path(__file__).parents[2] / "clients" / "openai_agents"


REQUIRED: list[bool] = []


def typed(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """A model that computes with the calculator, then gives its answer through the output
    tool the client declared (pydantic-ai's ``final_result``); it keeps whether each turn
    was asked for a tool call."""
    REQUIRED.append(options.require_tool)
    if messages[-1].role != "tool":
        return turn(tool_call("calculator", {"expression": "23 * 19"}))
    body = json.loads(messages[-1].content)
    output = next(t.name for t in tools if t.name.startswith("final_result"))
    return turn(tool_call(output, {"response": body["result"]["result"]}))


def model_of(api: Any, key: str) -> OpenAIChatModel:
    provider = OpenAIProvider(base_url=api.base + "/v1", api_key=key)
    return OpenAIChatModel("agentbus", provider=provider)


async def test_pydantic_ai_gets_an_int_through_its_output_tool(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(typed))
    key = await api.key()
    agent = Agent(model_of(api, key), output_type=int)

    REQUIRED.clear()
    result = await agent.run("What is 23 × 19?")

    assert result.output == 437
    # pydantic-ai sends tool_choice "required" (only its output tool may end the run): each
    # of the researcher's turns was asked for a call.
    assert REQUIRED == [True, True]


async def test_pydantic_ai_runs_its_function_tool_and_reads_the_answer(start_api: Any) -> None:
    model = WeatherModel()
    api = await start_api(ScriptedLLM(model))
    key = await api.key()
    agent = Agent(model_of(api, key))
    asked: list[str] = []

    @agent.tool_plain
    def get_weather(city: str) -> str:  # pyright: ignore[reportUnusedFunction]
        """The weather in a city, now."""
        asked.append(city)
        return "18 °C and sunny"

    result = await agent.run("What is the weather in Paris?")

    assert asked == ["Paris"]
    assert result.output == "In Paris it is 18 °C and sunny."


async def test_an_openai_agents_sdk_agent_runs_its_function_tool(start_api: Any) -> None:
    api = await start_api(ScriptedLLM(WeatherModel()))
    key = await api.key()
    python = await asyncio.to_thread(installed, OPENAI_AGENTS)
    proc = await asyncio.create_subprocess_exec(
        str(python),
        str(OPENAI_AGENTS / "client.py"),
        api.base,
        key,
        cwd=OPENAI_AGENTS,  # not the repository: `agents` must be the SDK's
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 600)
    assert proc.returncode == 0, err.decode()
    seen = json.loads(out)

    assert seen == {"asked": ["Paris"], "answer": "In Paris it is 18 °C and sunny."}
