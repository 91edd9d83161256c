"""`agentbus mcp` beside `agentbus up`, started as an assistant starts an MCP server."""

from __future__ import annotations

import os
from pathlib import Path

import httpx
import pytest
from mcp import Client, StdioServerParameters

from tests.e2e.test_multitask_processes import ready
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import AGENTBUS, free_port, processes, spawn
from tests.support import wait_for


@pytest.mark.timeout(300)
async def test_an_assistant_asks_through_agentbus_mcp_with_the_local_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    port = free_port()
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_API_PORT=str(port)
    )
    notes: list[str] = []

    async def note(progress: float, total: float | None, message: str | None) -> None:
        notes.append(message or "")

    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
            await wait_for(lambda: ready(http), within=90, interval=0.2)
            # No URL, no key: the local API and the key `up` saved, as `agentbus ask` finds them.
            server = StdioServerParameters(
                command=AGENTBUS, args=["mcp"], env={"PATH": os.environ["PATH"], **env}
            )
            async with Client(server, cache=None) as client:
                result = await client.call_tool(
                    "ask", {"question": "What is 23 × 19?"}, progress_callback=note
                )
            answer = result.structured_content or {}
            key = (data / "local-api-key").read_text().strip()
            run = await http.get(
                f"/api/v1/runs/{answer['run_id']}", headers={"Authorization": f"Bearer {key}"}
            )

    assert not result.is_error and "437" in answer["answer"]
    assert any(n.startswith("→ calculator(") for n in notes)
    assert run.json()["answer"] == answer["answer"] and run.json()["subject"] == "cli"
