"""A gateway process SIGKILLed at each point of a side-effecting call's window (real Redis,
real processes, a plugin and an MCP stdio tool, with and without an idempotency key).

At each point, for each tool in turn, one gateway is armed to kill itself there (test-only
fault points, `api.compose.faults`, passed in by the composition root) and the call is
published; the next gateway redelivers it.
What the downstream file holds afterwards is what a user would check:

| point | without a key | with a key |
|---|---|---|
| ``after_claim`` (tool not run) | 0 effects, ``outcome_unknown`` | 1, ``ok`` |
| ``after_tool``, ``before_record`` (outcome lost) | 1, ``outcome_unknown`` | 1, ``ok`` |
| ``before_commit`` (outcome recorded) | 1, ``ok`` (the record) | 1, ``ok`` |
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.commands import Command, RunState, ToolCallBatch, ToolCallRequest, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.store.migrate import upgrade_async
from gateway.once import idempotency_key
from tests.conftest import TEST_REDIS_URL
from tests.integration.gateway.kill_harness import (
    TOOLS,
    EffectTool,
    armed,
    audit_records,
    gateway_env,
)
from tests.processes import processes, spawn
from tests.support import events_of, wait_for

STREAM = keys.role_stream(keys.Role.GATEWAY, 0)


def expected(point: str, tool: EffectTool) -> tuple[str, int]:
    """The call's final code and its downstream effect count after a kill at ``point``."""
    if tool.keyed or point == "before_commit":
        return "ok", 1
    return "outcome_unknown", 0 if point == "after_claim" else 1


def batch(tool: EffectTool, run_id: str) -> Command:
    return Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        payload=ToolCallBatch(
            calls=[ToolCallRequest(call_id="c1", name=tool.name, arguments=tool.arguments(run_id))],
            state=RunState(question="a side effect, once"),
            then="end",
        ),
    )


async def group_exists(redis: Redis) -> bool:
    try:
        return any(g["name"] == b"gateway" for g in await redis.xinfo_groups(STREAM))
    except Exception:
        return False


async def done(redis: Redis, run_id: str) -> bool:
    events = await events_of(redis, run_id)
    return bool(events) and events[-1].type == "done"


@pytest.mark.timeout(300)  # several processes start on a busy 2-core host
@pytest.mark.parametrize("point", ["after_claim", "after_tool", "before_record", "before_commit"])
async def test_a_gateway_killed_at_the_point_leaves_each_effect_at_most_or_exactly_once(
    real_redis: Redis, tmp_path: Path, point: str
) -> None:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    env = gateway_env(tmp_path, db)
    effects = tmp_path / "effects"
    settings = BusSettings(redis_url=TEST_REDIS_URL)
    runs: list[tuple[EffectTool, str]] = []
    with processes() as procs:

        def gateway(n: int, tool: EffectTool | None) -> subprocess.Popen[bytes]:
            extra = armed(point, tool.name, tmp_path / f"fired-{n}") if tool else {}
            proc = spawn(["worker", "gateway"], {**env, **extra}, tmp_path / f"g{n}.log")
            procs.append(proc)
            return proc

        victim = gateway(0, TOOLS[0])
        await wait_for(lambda: group_exists(real_redis), within=60)
        for n, tool in enumerate(TOOLS):
            run_id = new_run_id()
            runs.append((tool, run_id))
            await publish(real_redis, batch(tool, run_id), settings)
            await wait_for(lambda v=victim: _exited(v), within=60)
            assert victim.returncode == -signal.SIGKILL, f"{tool.name}: the fault did not fire"
            # The next gateway redelivers this call and is armed for the next tool.
            victim = gateway(n + 1, TOOLS[n + 1] if n + 1 < len(TOOLS) else None)
            await wait_for(lambda r=run_id: done(real_redis, r), within=60)

    audit = {row["run_id"]: row for row in await audit_records(real_redis)}
    for tool, run_id in runs:
        code, count = expected(point, tool)
        events = await events_of(real_redis, run_id)
        [result] = [e for e in events if e.type == "tool_result"]
        assert (result.code, tool.effects(effects, run_id)) == (code, count), tool.name
        assert any(e.type == "step_retry" for e in events), tool.name
        assert [e.type for e in events].count("done") == 1
        assert audit[run_id]["code"] == code  # the audit row says what the model was told
        if code == "outcome_unknown":
            assert result.status == "error" and "may or may not have run" in result.message
    keyed = (effects / "ledger.tsv").read_text().splitlines()
    ledger_run = next(r for t, r in runs if t.name == "ledger_append")
    assert keyed == [f"{idempotency_key('t1', ledger_run, 'c1')}\t{ledger_run}"]


async def _exited(proc: subprocess.Popen[bytes]) -> bool:
    return proc.poll() is not None
