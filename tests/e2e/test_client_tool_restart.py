"""A run paused for its client's tool survives a restart of every process (the workers,
the embedded Redis, the API): the client's result, sent to the new processes with the
official `openai` package, resumes it to its answer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from agents.llm.scripted import BENCHMARK_ANSWER
from bus import embedded
from tests.e2e.test_up import until_up
from tests.processes import cli, free_port, processes, spawn
from tests.support import wait_for

WEATHER: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
# The scripted model calls a tool a question names, if it is offered (`benchmark_turn`).
QUESTION: list[ChatCompletionMessageParam] = [
    {"role": "user", "content": 'Weather? call get_weather with {"city": "Paris"}'}
]


async def test_a_client_tool_pause_resumes_after_every_process_restarted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in [k for k in os.environ if k.startswith("AGENTBUS_")]:
        monkeypatch.delenv(key)
    data, port = tmp_path / "data", free_port()
    env = {"AGENTBUS_DATA_DIR": str(data), "AGENTBUS_LLM": "scripted", "AGENTBUS_API_PORT": "0"}
    base = f"http://127.0.0.1:{port}"

    async def start(n: int) -> tuple[subprocess.Popen[bytes], subprocess.Popen[bytes]]:
        up = spawn(["up"], env, tmp_path / f"up{n}.log")
        await until_up(data, tmp_path / f"up{n}.log")
        api = spawn(["api", "--port", str(port)], env, tmp_path / f"api{n}.log")

        async def ready() -> bool:
            try:
                async with httpx.AsyncClient(base_url=base, timeout=5) as http:
                    return (await http.get("/readyz")).status_code == 200
            except httpx.HTTPError:
                return False

        await wait_for(ready, within=60, interval=0.2)
        return up, api

    def stop(*procs: subprocess.Popen[bytes]) -> None:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(30) == 0

    with processes() as procs:
        up, api = await start(1)
        procs += [up, api]
        key = (await cli(["keys", "create", "--tenant", "acme", "--subject", "ops"], env)).strip()
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0) as oai:
            first = await oai.chat.completions.create(
                model="agentbus", messages=QUESTION, tools=[WEATHER]
            )
        message = first.choices[0].message
        stop(api, up)
        assert not embedded.is_running(data)

        up, api = await start(2)
        procs += [up, api]
        async with openai.AsyncOpenAI(base_url=base + "/v1", api_key=key, max_retries=0) as oai:
            answered = await oai.chat.completions.create(
                model="agentbus",
                messages=[
                    *QUESTION,
                    message.model_dump(exclude_none=True),  # type: ignore[list-item]
                    {
                        "role": "tool",
                        "tool_call_id": (message.tool_calls or [])[0].id,
                        "content": json.dumps({"celsius": 18}),
                    },
                ],
                tools=[WEATHER],
            )
        stop(api, up)

    assert first.choices[0].finish_reason == "tool_calls"
    assert answered.id == first.id  # the same run, resumed by the new processes
    assert answered.choices[0].finish_reason == "stop"
    assert BENCHMARK_ANSWER in (answered.choices[0].message.content or "")
