"""`agentbus up` runs a schedule added with `agentbus schedules add` at its real tick."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bus.settings import BusSettings
from bus.store import MessageRole, Scope, TickState, open_store
from tests.e2e.test_up import embedded_env, until_up
from tests.processes import cli, processes, spawn
from tests.support import wait_for


@pytest.mark.timeout(300)
async def test_up_asks_a_scheduled_question_at_its_tick_into_the_schedules_conversation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data, env = embedded_env(
        tmp_path, monkeypatch, AGENTBUS_LLM="scripted", AGENTBUS_SCHEDULE_POLL_S="1"
    )
    with processes() as procs:
        procs.append(spawn(["up"], env, tmp_path / "up.log"))
        await until_up(data, tmp_path / "up.log")
        every_minute = ["schedules", "add", "* * * * *", "What is 23 × 19?", "--json"]
        added = json.loads(await cli(every_minute, env))
        me = Scope.user("local", "cli")  # the CLI's default tenant and subject

        async with open_store(BusSettings(data_dir=data)) as stores:
            assert stores.schedules is not None

            async def answered() -> bool:
                found = await stores.conversations.history(me, added["conversation_id"])
                return any(m.role == MessageRole.ASSISTANT for m in found)

            await wait_for(answered, within=150, interval=1)  # the next minute, then the run
            ticks = await stores.schedules.ticks(me, added["id"])
            history = await stores.conversations.history(me, added["conversation_id"])
        await cli(["schedules", "pause", added["id"]], env)

    assert ticks[-1].state == TickState.STARTED and ticks[-1].tick_at % 60 == 0
    first = [m for m in history if m.run_id == ticks[-1].run_id]
    assert [m.role for m in first] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert "437" in first[1].content
