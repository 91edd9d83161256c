"""A tenant's settings change reaches the gateway processes when its PUT returns."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from redis.asyncio import Redis

from bus import keys
from bus.commands import Command, RunState, ToolCallBatch, ToolCallRequest, deadline_in, new_run_id
from bus.events import ToolResult
from bus.publish import publish
from bus.settings import BusSettings
from tests.conftest import TEST_REDIS_URL
from tests.processes import cli, free_port, process_env, processes, spawn
from tests.support import events_of, wait_for


async def call_current_time(redis: Redis) -> ToolResult:
    """Ask the gateway for ``current_time`` in a run of tenant t1; its result."""
    run_id = new_run_id()
    command = Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        payload=ToolCallBatch(
            calls=[ToolCallRequest(call_id="c1", name="current_time", arguments={})],
            state=RunState(question="what time is it?"),
            then="end",
        ),
    )
    await publish(redis, command, BusSettings(redis_url=TEST_REDIS_URL))

    async def result() -> ToolResult | None:
        found = [e for e in await events_of(redis, run_id) if isinstance(e, ToolResult)]
        return found[0] if found else None

    await wait_for(result, within=30)
    found = await result()
    assert found is not None
    return found


@pytest.mark.timeout(180)
async def test_a_tool_disabled_over_the_api_is_refused_by_the_next_call(
    real_redis: Redis, tmp_path: Path
) -> None:
    port = free_port()
    env = await process_env(
        tmp_path,
        AGENTBUS_READ_BLOCK_MS="100",
    )
    with processes() as procs:
        procs.append(spawn(["worker", "gateway", "recorder"], env, tmp_path / "gateway.log"))
        procs.append(spawn(["api", "--port", str(port)], env, tmp_path / "api.log"))
        admin = await cli(
            ["keys", "create", "--tenant", "t1", "--subject", "root", "--role", "admin"], env
        )
        auth = {"Authorization": f"Bearer {admin.strip()}"}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:

            async def serving() -> bool:
                try:
                    return (await http.get("/healthz")).status_code == 200
                except httpx.TransportError:
                    return False

            await wait_for(serving, within=60)
            before = await call_current_time(real_redis)  # the gateway has t1's policy cached
            put = await http.put(
                "/api/v1/settings", json={"enabled_tools": ["calculator"]}, headers=auth
            )
            assert put.status_code == 200, put.text
            after = await call_current_time(real_redis)  # at once, well inside the cache's 5 s

    assert before.status == "ok"
    assert (after.status, after.code) == ("refused", "permission_denied")
    assert "not enabled for this tenant" in after.message
