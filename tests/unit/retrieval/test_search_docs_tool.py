"""search_docs through the gateway chain: caller-filtered, numbered, schema-checked."""

from __future__ import annotations

from typing import Any

import pytest

from agents.deps import tool_definitions
from agents.state import tool_message
from bus.commands import ToolCallRequest
from gateway.call_context import CallContext, CallPolicy, GatewayDeps
from gateway.chain import invoke
from gateway.errors import ToolError
from gateway.registry import ToolRegistry
from gateway.tools.search_docs import SearchDocs, in_process
from gateway.worker import call_result
from retrieval.citations import check_answer_citations
from retrieval.stack import Retrieval
from tests.unit.retrieval.conftest import add


def _ctx(registry: ToolRegistry, tenant: str, groups: frozenset[str] = frozenset()) -> CallContext:
    return CallContext(
        tenant_id=tenant,
        subject="alice",
        run_id="run1",
        agent="researcher",
        policy=CallPolicy(),
        deps=GatewayDeps(registry=registry),
        groups=groups,
    )


def _call(query: str, **extra: Any) -> ToolCallRequest:
    return ToolCallRequest(call_id="s1c0", name="search_docs", arguments={"query": query, **extra})


async def test_search_docs_returns_numbered_chunks_of_the_callers_tenant_only(
    retrieval: Retrieval,
) -> None:
    await add(retrieval, "a.md", "# A\n\nKafka partitions order messages per key.", tenant="t1")
    await add(retrieval, "b.md", "# B\n\nKafka partitions are replicated to brokers.", tenant="t2")
    await add(
        retrieval, "c.md", "# C\n\nKafka partitions secret plan.", tenant="t1", acl=["finance"]
    )
    registry = ToolRegistry([SearchDocs(in_process(retrieval.searcher))])
    outcome, _ = await invoke(_call("kafka partitions", top_k=10), _ctx(registry, "t1"))
    assert outcome.status == "ok", outcome
    results = outcome.result["results"]
    assert [r["source"] for r in results] == ["a.md"]
    assert results[0]["ref"] == 1 and results[0]["id"] and "note" in outcome.result
    finance, _ = await invoke(
        _call("kafka partitions"), _ctx(registry, "t1", frozenset({"finance"}))
    )
    assert sorted(r["source"] for r in finance.result["results"]) == ["a.md", "c.md"]
    other, _ = await invoke(_call("kafka partitions"), _ctx(registry, "t2"))
    assert [r["source"] for r in other.result["results"]] == ["b.md"]


async def test_citations_check_against_the_tool_message_built_from_the_gateways_result(
    retrieval: Retrieval,
) -> None:
    await add(retrieval, "redis.md", "# Redis\n\nRedis streams keep entries until trimmed.")
    registry = ToolRegistry([SearchDocs(in_process(retrieval.searcher))])
    call = _call("redis streams")
    outcome, _ = await invoke(call, _ctx(registry, "t1"))
    messages = [tool_message(call_result(call, outcome))]
    checked = check_answer_citations("Entries stay until trimmed [1]. Also [2].", messages)
    assert checked.answer == "Entries stay until trimmed [1]. Also."
    assert checked.stripped == 1
    assert [(c.ref, c.source, c.title) for c in checked.citations] == [(1, "redis.md", "Redis")]


async def test_bad_arguments_and_callerless_runs_are_refused(retrieval: Retrieval) -> None:
    tool = SearchDocs(in_process(retrieval.searcher))
    registry = ToolRegistry([tool])
    bad, _ = await invoke(_call("x", top_k=500), _ctx(registry, "t1"))
    assert (bad.status, bad.code) == ("error", "schema_invalid")
    assert tool_definitions(registry)[0].parameters == tool.spec.input_schema  # offered as is
    assert tool.spec.risk == "LOW" and not tool.spec.hosts
    with pytest.raises(ToolError, match="caller"):
        await tool.run({"query": "x"}, None)


async def test_documents_gather_source_filters_by_the_commands_tenant_and_groups(
    retrieval: Retrieval,
) -> None:
    from bus.commands import AgentTask, Command, RunState, deadline_in
    from bus.keys import Role
    from retrieval.gather_source import documents_source

    await add(retrieval, "pub.md", "# P\n\nOrbital mechanics basics.", tenant="t1")
    await add(retrieval, "sec.md", "# S\n\nOrbital mechanics secrets.", tenant="t1", acl=["nasa"])
    await add(retrieval, "oth.md", "# O\n\nOrbital mechanics elsewhere.", tenant="t2")
    source = documents_source(retrieval.searcher, top_k=10)

    def command(groups: tuple[str, ...]) -> Command:
        return Command(
            run_id="r1",
            tenant_id="t1",
            subject="bob",
            role=Role.RETRIEVAL,
            deadline=deadline_in(60),
            groups=groups,
            payload=AgentTask(state=RunState(question="q")),
        )

    plain = await source(command(()), "orbital mechanics")
    assert [i["source"] for i in plain] == ["pub.md"]
    assert set(plain[0]) == {"id", "source", "title", "heading", "text"}
    cleared = await source(command(("nasa",)), "orbital mechanics")
    assert sorted(i["source"] for i in cleared) == ["pub.md", "sec.md"]
