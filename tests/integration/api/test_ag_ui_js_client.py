"""The official AG-UI JavaScript client (``@ag-ui/client``'s ``HttpAgent``) against
``POST /api/v1/ag-ui`` as a front end with a tool of its own: the model calls the front
end's tool, the run pauses and hands the call over, and the front end's next run input,
ending with the tool's result, resumes the run to its answer."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agents.llm.scripted import ScriptedLLM
from tests.integration.api.test_client_tools import WeatherModel
from tests.npm import NODE, installed, node_env

CLIENT = Path(__file__).parents[2] / "clients" / "ag_ui_js"


async def run_client(base: str, key: str) -> dict[str, Any]:
    modules = await asyncio.to_thread(installed, CLIENT)
    proc = await asyncio.create_subprocess_exec(
        str(NODE),
        str(CLIENT / "client.mjs"),
        base,
        key,
        str(modules),
        cwd=CLIENT,
        env=node_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_a_front_end_tool_pauses_the_run_and_its_result_resumes_it(
    start_api: Any,
) -> None:
    model = WeatherModel()
    api = await start_api(ScriptedLLM(model))
    key = await api.key()
    seen = await run_client(api.base, key)

    assert [(c["name"], c["arguments"]) for c in seen["calls"]] == [
        ("get_weather", {"city": "Paris"})
    ]
    assert "TOOL_CALL_START" in seen["firstEvents"]
    assert "TOOL_CALL_RESULT" not in seen["firstEvents"]  # the front end runs it
    assert seen["firstEvents"][-1] == "RUN_FINISHED"
    assert seen["firstResult"]["tool_calls"] == [c["id"] for c in seen["calls"]]
    assert seen["answer"] == "In Paris it is 18 °C and sunny."
    assert seen["secondResult"]["agentbus_run_id"] == seen["firstResult"]["agentbus_run_id"]
    assert model.results == ["ok"]
