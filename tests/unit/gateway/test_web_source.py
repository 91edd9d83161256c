"""The ``web`` gather source: web_search through the gateway's chain, against a local server."""

from __future__ import annotations

import json
from typing import Any

from agents.roles.gather import handle_gather
from agents.sources import WEB, Source, web_source
from bus import keys
from bus.commands import Command, GatherTask, RunSettings, RunState, deadline_in, new_run_id
from bus.ledger import LedgerRecord
from bus.runtime.context import StepContext
from bus.settings import BusSettings
from gateway.call_context import GatewayDeps
from gateway.ports import TenantPolicy
from gateway.registry import ToolRegistry
from gateway.tenants import DeploymentPolicies
from gateway.tools import WebSearch
from tests.unit.gateway.local_http import OVERRIDE, FakeResolver, LocalServer
from tests.unit.gateway.test_web_tools import DDG_PAGE


def gather_command(query: str = "python docs") -> Command:
    state = RunState(question=query, settings=RunSettings(mode="multi", sources=[WEB]))
    task = GatherTask(
        source=WEB,
        query=query,
        join="evidence-2",
        expected=1,
        purpose="evidence",
        state=state,
    )
    return Command(
        run_id=new_run_id(),
        tenant_id="t1",
        subject="alice",
        role=keys.Role.RETRIEVAL,
        step=1,
        deadline=deadline_in(60),
        payload=task,
        branch=WEB,
    )


def source(server: LocalServer, resolver: FakeResolver, policy: TenantPolicy) -> Source:
    search = WebSearch(f"http://html.duckduckgo.com:{server.port}/html/")
    deps = GatewayDeps(
        registry=ToolRegistry([search]), resolver=resolver, connect_override=OVERRIDE
    )
    return web_source(deps, DeploymentPolicies(policy))


async def gather(
    server: LocalServer, resolver: FakeResolver, policy: TenantPolicy
) -> tuple[Command, Any, list[LedgerRecord]]:
    command = gather_command()
    ctx = StepContext(command, 1, None, BusSettings())  # type: ignore[arg-type]
    result = await handle_gather(ctx, command, {WEB: source(server, resolver, policy)}, 5.0)
    assert result.join is not None
    return command, json.loads(result.join.value), list(result.records)


async def test_the_web_branch_searches_through_the_chain_and_commits_its_audit_row(
    server: LocalServer, resolver: FakeResolver
) -> None:
    server.route("/html/", body=DDG_PAGE, content_type="text/html; charset=utf-8")
    allowed = TenantPolicy(egress_enabled=True, allowed_egress_hosts=frozenset({"*"}))
    command, value, records = await gather(server, resolver, allowed)
    assert value["status"] == "ok"
    assert [(i["source"], i["title"]) for i in value["items"]] == [
        ("https://www.python.org/doc/", "Python Documentation"),
        ("https://peps.python.org/", "PEPs"),
    ]
    assert value["items"][0]["text"] == "The official Python docs & tutorials."
    assert server.seen[0].path == "/html/?q=python+docs"
    (record,) = records
    entry = record.data["entry"]
    assert (record.kind, record.key, record.tenant_id) == ("audit", f"{command.step_id}:0", "t1")
    assert (entry["tool"], entry["agent"], entry["status"]) == ("web_search", "gather", "ok")
    assert entry["args"] == {"query": "python docs"}


async def test_without_egress_the_web_branch_contributes_nothing_but_is_audited(
    server: LocalServer, resolver: FakeResolver
) -> None:
    _, value, records = await gather(server, resolver, TenantPolicy())
    assert (value["status"], value["items"]) == ("ok", [])
    assert server.seen == []  # the SSRF guard and allowlist stopped it before any request
    (record,) = records
    assert record.data["entry"]["status"] == "egress_blocked"


async def test_a_tenant_without_web_search_gets_a_refusal_not_a_search(
    server: LocalServer, resolver: FakeResolver
) -> None:
    policy = TenantPolicy(
        enabled_tools=frozenset({"calculator"}),
        egress_enabled=True,
        allowed_egress_hosts=frozenset({"*"}),
    )
    _, value, records = await gather(server, resolver, policy)
    assert value["items"] == [] and server.seen == []
    assert records[0].data["entry"]["status"] == "refused"
