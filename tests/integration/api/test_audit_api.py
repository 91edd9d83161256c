"""Reading the audit log: ``GET /api/v1/audit`` (scoped, filtered, paged, redacted) and
``agentbus audit list``."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Sequence
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, tool_call, turn
from bus.store import KeyRole, Scope
from tests import warm_cli
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.owners import finished_run
from tests.support import wait_for

LEAKED = "sk-live-0123456789abcdef"


def calls_with_a_secret() -> ScriptedLLM:
    """Each run makes one calculator call whose arguments carry a credential."""

    def script(
        messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
    ):
        if messages[-1].role == "tool":
            return turn(text("It is 4."))
        return turn(tool_call("calculator", {"expression": "2 + 2", "api_key": LEAKED}))

    return ScriptedLLM(script)


async def rows(api: Api, key: str, query: str = "") -> dict[str, Any]:
    got = await api.http.get(f"/api/v1/audit{query}", headers=api.auth(key))
    assert got.status_code == 200, got.text
    page: dict[str, Any] = got.json()
    return page


async def test_each_caller_reads_its_own_rows_filtered_paged_and_redacted(
    start_api: StartApi, store_backend: dict[str, Any]
) -> None:
    api = await start_api(calls_with_a_secret(), **store_backend)
    alice, bob = await api.key("t1", "alice"), await api.key("t1", "bob")
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    first = await finished_run(api, alice, "one")
    second = await finished_run(api, alice, "two", first["conversation_id"])
    other = await finished_run(api, alice, "three")
    bobs = await finished_run(api, bob, "bob's")
    runs = [first["run_id"], second["run_id"], other["run_id"], bobs["run_id"]]

    async def all_recorded() -> bool:  # the recorder appends a step's rows after its commit
        return len((await rows(api, admin))["rows"]) >= 4

    await wait_for(all_recorded, within=20)
    past_bigint = await api.http.get(
        "/api/v1/audit", params={"before": 2**64}, headers=api.auth(admin)
    )  # found by fuzzing: a 500 before the bound
    assert past_bigint.status_code == 422 and past_bigint.json()["error"]["field"] == "before"

    mine = (await rows(api, alice))["rows"]
    assert sorted(r["run_id"] for r in mine) == sorted(runs[:3])
    assert [r["run_id"] for r in (await rows(api, bob))["rows"]] == [runs[3]]
    assert sorted(r["run_id"] for r in (await rows(api, admin))["rows"]) == sorted(runs)
    assert (await rows(api, await api.key("t2", "alice")))["rows"] == []
    assert mine[0]["args"] == {"expression": "2 + 2", "api_key": "[REDACTED]"}
    every = await api.http.get("/api/v1/audit", headers=api.auth(admin))
    assert LEAKED not in every.text and "tenant_id" not in every.text

    by_run = await rows(api, alice, f"?run_id={first['run_id']}")
    assert [r["run_id"] for r in by_run["rows"]] == [first["run_id"]]
    assert (await rows(api, bob, f"?run_id={first['run_id']}"))["rows"] == []
    by_conversation = await rows(api, alice, f"?conversation_id={first['conversation_id']}")
    assert sorted(r["run_id"] for r in by_conversation["rows"]) == sorted(runs[:2])

    seen: list[int] = []
    query = "?limit=2"
    while True:
        page = await rows(api, admin, query)
        seen += [r["seq"] for r in page["rows"]]
        if page["next_before"] is None:
            break
        query = f"?limit=2&before={page['next_before']}"
    assert seen == sorted(seen, reverse=True) and len(seen) == len(set(seen)) == 4

    bad = await api.http.get("/api/v1/audit?run_id=no%20such", headers=api.auth(alice))
    assert bad.status_code == 422
    anonymous = await api.http.get("/api/v1/audit")
    assert anonymous.status_code == 401


@pytest.mark.timeout(300)  # two CLI processes; each takes seconds to start on a busy host
async def test_agentbus_audit_list_prints_a_tenants_rows(start_api: StartApi) -> None:
    api = await start_api(calls_with_a_secret())
    alice = await api.key("t1", "alice")
    run = await finished_run(api, alice, "one")
    await finished_run(api, await api.key("t1", "bob"), "two")
    env = {
        **os.environ,
        "AGENTBUS_DATABASE_URL": api.settings.bus.resolved_database_url(),
        "AGENTBUS_DATA_DIR": str(api.settings.bus.data_dir),
    }

    async def cli(*args: str) -> str:
        done = await asyncio.wait_for(warm_cli.run(["audit", "list", *args], env), 60)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    async def both_recorded() -> bool:  # the recorder appends rows after each step
        assert api.stores.audit is not None
        return len(await api.stores.audit.list(Scope.tenant("t1"))) == 2

    await wait_for(both_recorded, within=20)
    lines = (await cli("--tenant", "t1", "--subject", "alice", "--json")).splitlines()
    alices = [json.loads(line) for line in lines]
    assert [r["run_id"] for r in alices] == [run["run_id"]]
    assert alices[0]["args"]["api_key"] == "[REDACTED]"
    printed = await cli("--tenant", "t1", "--limit", "1")
    assert "calculator" in printed and "(more: --before" in printed and LEAKED not in printed
