"""Whole runs, single and multi accurate, through real processes, with the gateway SIGKILLed
right after a side-effecting tool ran (``after_tool``): a plugin tool without a key ends
``outcome_unknown`` (the model is told, the page shows it, the answer still comes), an MCP
stdio tool with a key runs again with it; each took effect once downstream."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.commands import AgentTask, Command, RunSettings, RunState, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.store.migrate import upgrade_async
from bus.transcript import fold
from tests.conftest import TEST_REDIS_URL
from tests.integration.gateway.kill_harness import TOOLS, armed, gateway_env
from tests.processes import processes, spawn
from tests.support import events_of, wait_for

AGENT_ROLES = ["intake", "planner", "researcher", "critic", "verifier", "finalizer", "recorder"]
UNKEYED_PLUGIN, KEYED_MCP = TOOLS[0], TOOLS[3]


def run_command(run_id: str, tool_name: str, arguments: dict[str, str], mode: str) -> Command:
    settings = (
        RunSettings(mode="multi", accuracy="accurate", verifier_check=False)
        if mode == "multi"
        else RunSettings()
    )
    text = f"Record this: call {tool_name} with {json.dumps(arguments)}"
    return Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.INTAKE,
        deadline=deadline_in(120),
        payload=AgentTask(state=RunState(question=text, settings=settings)),
    )


async def ready(redis: Redis) -> bool:
    for role in ["intake", "researcher", "gateway", "finalizer"]:
        stream = keys.role_stream(role, 0)
        if not await redis.exists(stream) or not await redis.xinfo_groups(stream):
            return False
    return True


async def finished(redis: Redis, run_id: str) -> bool:
    events = await events_of(redis, run_id)
    return bool(events) and events[-1].type == "done"


async def exited(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is not None


@pytest.mark.timeout(300)  # several processes start on a busy 2-core host
@pytest.mark.parametrize("mode", ["single", "multi"])
async def test_a_gateway_killed_after_the_tool_ran_leaves_one_effect_per_call(
    real_redis: Redis, tmp_path: Path, mode: str
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    env = {**gateway_env(tmp_path, db), "AGENTBUS_LLM": "scripted"}
    settings = BusSettings(redis_url=TEST_REDIS_URL)
    runs: list[str] = []
    with processes() as procs:
        procs.append(spawn(["worker", *AGENT_ROLES, "--concurrency", "4"], env, tmp_path / "a.log"))
        sequence = [UNKEYED_PLUGIN, KEYED_MCP, None]
        fault = armed("after_tool", UNKEYED_PLUGIN.name, tmp_path / "fired-0")
        victim = spawn(["worker", "gateway"], {**env, **fault}, tmp_path / "g0.log")
        procs.append(victim)
        await wait_for(lambda: ready(real_redis), within=90)
        for n, tool in enumerate(sequence[:2]):
            assert tool is not None
            run_id = new_run_id()
            runs.append(run_id)
            command = run_command(run_id, tool.name, tool.arguments(run_id), mode)
            await publish(real_redis, command, settings)
            await wait_for(lambda v=victim: exited(v), within=60)
            assert victim.returncode == -signal.SIGKILL
            following = sequence[n + 1]
            extra = armed("after_tool", following.name, tmp_path / "fired-1") if following else {}
            victim = spawn(["worker", "gateway"], {**env, **extra}, tmp_path / f"g{n + 1}.log")
            procs.append(victim)
            await wait_for(lambda r=run_id: finished(real_redis, r), within=60)

    effects = tmp_path / "effects"
    for tool, run_id, code in [
        (UNKEYED_PLUGIN, runs[0], "outcome_unknown"),
        (KEYED_MCP, runs[1], "ok"),
    ]:
        events = await events_of(real_redis, run_id)
        transcript = fold(events)
        assert transcript.status == "done" and transcript.answer, tool.name
        [result] = [e for e in events if e.type == "tool_result"]
        assert result.code == code, tool.name
        assert tool.effects(effects, run_id) == 1, tool.name
        assert any(e.type == "step_retry" and e.agent == "gateway" for e in events)
