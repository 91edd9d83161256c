"""Gateway worker processes over a real Redis: exactly-once effects, the tools and audit CLI."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
from pathlib import Path

import pytest
from redis.asyncio import Redis

from bus import keys
from bus.commands import Command, RunState, ToolCallBatch, ToolCallRequest, deadline_in, new_run_id
from bus.publish import publish
from bus.settings import BusSettings
from bus.store import AuditStore, Scope, make_engine
from bus.store.migrate import upgrade_async
from tests import warm_cli
from tests.conftest import TEST_REDIS_URL
from tests.processes import processes, spawn
from tests.support import events_of, wait_for

STREAM = keys.role_stream(keys.Role.GATEWAY, 0)
PLUGIN = "tests.integration.gateway.effects_plugin:tools"


@pytest.fixture
async def env(tmp_path: Path) -> dict[str, str]:
    db = f"sqlite+aiosqlite:///{tmp_path / 'store.db'}"
    await upgrade_async(db)
    (tmp_path / "effects").mkdir()
    return {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATABASE_URL": db,
        "AGENTBUS_DATA_DIR": str(tmp_path / "data"),
        "AGENTBUS_CLAIM_IDLE_MS": "1000",
        "AGENTBUS_HEARTBEAT_MS": "200",
        "AGENTBUS_READ_BLOCK_MS": "100",
        "AGENTBUS_TOOL_PLUGINS": PLUGIN,
        "AGENTBUS_TEST_EFFECTS_DIR": str(tmp_path / "effects"),
        "AGENTBUS_TENANT": "t1",
    }


async def run_cli(args: list[str], env: dict[str, str]) -> tuple[int, str, str]:
    """``agentbus ARGS`` in a process of its own (forked warm: ``tests.warm_cli``)."""
    done = await asyncio.wait_for(warm_cli.run(args, {**os.environ, **env}), 90)
    return done.returncode, done.stdout, done.stderr


async def group_exists(redis: Redis) -> bool:
    try:
        return any(g["name"] == b"gateway" for g in await redis.xinfo_groups(STREAM))
    except Exception:
        return False


async def audit_rows(env: dict[str, str], tenant: str = "t1") -> list[tuple[str, str]]:
    engine = make_engine(env["AGENTBUS_DATABASE_URL"])
    try:
        rows = await AuditStore(engine).list(Scope.tenant(tenant), limit=100)
    finally:
        await engine.dispose()
    return [(r.tool, r.call_id) for r in reversed(rows)]


async def test_a_side_effect_runs_once_when_its_step_is_redelivered_after_sigkill(
    real_redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    effects = tmp_path / "effects"
    run_id = new_run_id()
    command = Command(
        run_id=run_id,
        tenant_id="t1",
        subject="alice",
        role=keys.Role.GATEWAY,
        deadline=deadline_in(60),
        payload=ToolCallBatch(
            calls=[
                ToolCallRequest(call_id="c1", name="append_line", arguments={"text": "once"}),
                # Holds the step open after the side effect, until the test creates "go".
                ToolCallRequest(call_id="c2", name="wait_for_file", arguments={"name": "go"}),
            ],
            state=RunState(question="exactly once?"),
            then="end",
        ),
    )
    record = keys.run_call(run_id, 0, "c1")
    with processes() as procs:
        victim = spawn(["worker", "gateway"], env, tmp_path / "a.log")
        procs.append(victim)
        procs.append(spawn(["worker", "recorder"], env, tmp_path / "r.log"))
        await wait_for(lambda: group_exists(real_redis), within=30)
        await publish(real_redis, command, BusSettings(redis_url=TEST_REDIS_URL))
        # The side effect happened and its outcome is recorded; the step is not done, so
        # its audit row has not left with a commit yet.
        await wait_for(lambda: real_redis.exists(record), within=30)
        assert (effects / "effects.log").read_text() == "once\n"
        assert await audit_rows(env) == []
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        (effects / "go").touch()
        procs.append(spawn(["worker", "gateway"], env, tmp_path / "b.log"))
        await wait_for(lambda: _done(real_redis, run_id), within=40)
        await wait_for(lambda: _rows_at_least(env, 2), within=10)

    assert (effects / "effects.log").read_text() == "once\n"  # ran once, not twice
    events = await events_of(real_redis, run_id)
    assert any(e.type == "step_retry" for e in events)
    results = {e.call_id: e for e in events if e.type == "tool_result"}
    assert results["c1"].status == "ok" and results["c1"].result["pid"] == victim.pid
    assert results["c2"].status == "ok"
    assert events[-1].type == "done" and events[-1].status == "done"
    # One audit row per call: the redelivered step committed c1's recorded row with c2's.
    assert await audit_rows(env) == [("append_line", "c1"), ("wait_for_file", "c2")]


async def test_tools_cli_calls_through_the_gateway_and_audit_verify_checks_the_chain(
    real_redis: Redis, env: dict[str, str], tmp_path: Path
) -> None:
    code, out, _ = await run_cli(["tools", "list"], env)
    assert code == 0 and "append_line" in out and "calculator" in out
    with processes() as procs:
        procs.append(spawn(["worker", "gateway", "--concurrency", "2"], env, tmp_path / "g.log"))
        procs.append(spawn(["worker", "recorder"], env, tmp_path / "r.log"))
        await wait_for(lambda: group_exists(real_redis), within=30)

        code, out, err = await run_cli(
            ["tools", "call", "calculator", '{"expression": "6*7"}'], env
        )
        assert code == 0, err
        outcome = json.loads(out)
        assert (outcome["status"], outcome["code"]) == ("ok", "ok")
        assert outcome["result"]["result"] == 42 and outcome["tool"] == "calculator"

        code, out, _ = await run_cli(
            ["tools", "call", "http_fetch", '{"url": "https://a.test/"}'], env
        )
        assert code == 1 and json.loads(out)["code"] == "approval_required"

        code, out, _ = await run_cli(
            ["tools", "call", "http_fetch", '{"url": "http://127.0.0.1/"}', "--approve-high-risk"],
            env,
        )
        assert code == 1 and json.loads(out)["status"] in ("egress_blocked", "refused")

        code, out, err = await run_cli(
            ["tools", "call", "append_line", '{"text": "from cli"}', "--tenant", "t2"], env
        )
        assert code == 0, out + err
        assert json.loads(out)["result"]["appended"] == "from cli"
        # The recorder appends the rows the gateway's steps committed.
        await wait_for(lambda: _rows_at_least(env, 3), within=10)
        await wait_for(lambda: _rows_at_least(env, 1, tenant="t2"), within=10)

    code, out, _ = await run_cli(["audit", "verify"], env)
    assert code == 0, out
    assert "t1: ok, 3 rows" in out and "t2: ok, 1 rows" in out

    db = env["AGENTBUS_DATABASE_URL"].removeprefix("sqlite+aiosqlite:///")
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE audit_log SET status = 'ok', code = 'ok' WHERE tenant_id = 't1' AND seq = 2"
        )
    code, out, _ = await run_cli(["audit", "verify", "--tenant", "t1"], env)
    assert code == 1
    assert "t1: BROKEN at row id" in out and "(seq 2)" in out and "edited" in out
    assert "tool=http_fetch" in out


async def _rows_at_least(env: dict[str, str], n: int, tenant: str = "t1") -> bool:
    return len(await audit_rows(env, tenant)) >= n


async def _done(redis: Redis, run_id: str) -> bool:
    events = await events_of(redis, run_id)
    return bool(events) and events[-1].type == "done"
