"""Drives agentbus's OpenAI-compatible endpoint with the OpenAI Agents SDK (openai-agents):
an agent with a function tool the SDK runs itself. Prints what it saw as one JSON document.

Usage: python client.py BASE_URL API_KEY [QUESTION] (in the venv tests/pyenv.py makes: the SDK's
import name, ``agents``, is agentbus's own).
"""

import asyncio
import json
import sys

from openai import AsyncOpenAI

from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled

asked: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city, now."""
    asked.append(city)
    return "18 °C and sunny"


async def main(base: str, key: str, question: str) -> None:
    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    model = OpenAIChatCompletionsModel(model="agentbus", openai_client=client)
    agent = Agent(
        name="weather", instructions="Answer the question.", tools=[get_weather], model=model
    )
    result = await Runner.run(agent, question)
    print(json.dumps({"asked": asked, "answer": result.final_output}))


question = sys.argv[3] if len(sys.argv) > 3 else "What is the weather in Paris?"
asyncio.run(main(sys.argv[1], sys.argv[2], question))
