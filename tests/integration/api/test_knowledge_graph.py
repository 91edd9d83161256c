"""The knowledge graph through a real API: documents uploaded over HTTP, their facts
extracted on the retrieval role's ingest lane, walked by single mode's ``query_graph``,
multi mode's ``graph`` source and the last judge's re-query, under the users' ACL groups.

t1 uploads two public documents (a project and who leads it) and one ``hr`` document
(where that person works). alice (t1, hr) must reach the hr document's facts from a
question that never names its subject; bob (t1, no group) never may. Deleting the
document removes its facts; uploading an edited one replaces them.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, agent_of, benchmark_turn, text, tool_call, turn
from bus.store import KeyRole
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_default_sources import planner_sources
from tests.integration.api.test_rest import sse
from tests.support import wait_for

QUESTION = "Which office does the lead of Project Falcon work from?"
PROJECT = ("project-falcon.md", b"# Project Falcon\n\nProject Falcon is led by Maria Chen.")
HANDBOOK = ("handbook.md", b"# Handbook\n\nEvery project has one lead and a quarterly plan.")
PERSON = (
    "maria-chen.md",
    b"# Maria Chen\n\nMaria Chen works from the Lisbon office. "
    b"Maria Chen reports to Elena Petrova.",
)
_GRAPH_REF = re.compile(r"\[(\d+)\] \(graph: Maria Chen\)")


@pytest.fixture
async def retrieval(tmp_path: Path) -> AsyncIterator[Retrieval]:
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        yield r


def _cited(messages: Sequence[ChatMessage]) -> int | None:
    """The number the run showed the hr document under, in a query_graph result or the
    merged evidence (None: it was never shown)."""
    for m in reversed(messages):
        if m.role == "tool" and m.name == "query_graph":
            body = json.loads(m.content)
            for item in body["result"]["results"]:
                if item["source"] == PERSON[0]:
                    return int(item["ref"])
        if m.role == "system" and (found := _GRAPH_REF.search(m.content)):
            return int(found.group(1))
    return None


def script(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """Judges play the benchmark; the researcher (and the fact-check's tool pass) walks the
    graph once, then answers from the passage it was shown, if it was shown one."""
    if agent_of(messages, options) != "researcher":
        return benchmark_turn(messages, tools, options)
    if messages[-1].role != "tool" and any(t.name == "query_graph" for t in tools):
        return turn(tool_call("query_graph", {"query": QUESTION}))
    ref = _cited(messages)
    return turn(text("I do not know." if ref is None else f"The Lisbon office [{ref}]."))


async def upload(api: Api, admin: str, file: tuple[str, bytes], acl: str = "") -> dict[str, Any]:
    """Upload one file and wait until its ingest job is done; the job's status."""
    name, body = file
    data = {"acl": acl} if acl else {}
    up = await api.http.post(
        "/api/v1/documents",
        files={"files": (name, body, "text/markdown")},
        data=data,
        headers=api.auth(admin),
    )
    assert up.status_code == 202, up.text
    job_id = up.json()["job_id"]
    status: dict[str, Any] = {}

    async def done() -> bool:
        got = await api.http.get(f"/api/v1/documents/jobs/{job_id}", headers=api.auth(admin))
        status.update(got.json())
        return status["status"] != "running"

    await wait_for(done, within=30)
    assert status["status"] == "done", status
    return status | {"doc_id": up.json()["documents"][0]["doc_id"]}


async def corpus(api: Api) -> dict[str, Any]:
    """The three documents uploaded as t1's admin; keys for alice (hr) and bob."""
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    jobs = [await upload(api, admin, f) for f in (PROJECT, HANDBOOK)]
    person = await upload(api, admin, PERSON, acl="hr")
    # The handbook names no one: "every project" is no particular project.
    assert jobs[0]["facts"] == 1 and jobs[1]["facts"] == 0
    assert person["facts"] == 2
    return {
        "admin": admin,
        "person": person["doc_id"],
        "alice": await api.key("t1", "alice", groups=("hr",)),
        "bob": await api.key("t1", "bob"),
    }


async def ask(api: Api, key: str, **settings: Any) -> list[dict[str, Any]]:
    body: dict[str, Any] = {"question": QUESTION}
    if settings:
        body["settings"] = settings
    run = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert run.status_code == 202, run.text
    events = await sse(api, key, run.json()["run_id"])
    assert events[-1]["type"] == "done"
    return events


def graph_sources(events: list[dict[str, Any]]) -> list[set[str]]:
    """Per query_graph result, the documents its passages came from."""
    return [
        {r["source"] for r in e["result"]["results"]}
        for e in events
        if e["type"] == "tool_result" and e["tool"] == "query_graph" and e["status"] == "ok"
    ]


def final_citations(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The answer's kept citations (the finalizer sends none when it kept none)."""
    kept = [e for e in events if e["type"] == "citations" and e["agent"] == "finalizer"]
    return [c for e in kept for c in e["items"]]


async def test_single_mode_query_graph_reaches_the_second_hop_only_for_its_group(
    start_api: StartApi, retrieval: Retrieval, store_backend: dict[str, Any]
) -> None:
    api = await start_api(ScriptedLLM(script), retrieval=retrieval, **store_backend)
    who = await corpus(api)

    alice = await ask(api, who["alice"])
    [found] = graph_sources(alice)
    assert found == {PROJECT[0], PERSON[0]}  # the question names only the project
    [passage] = [
        r
        for e in alice
        if e["type"] == "tool_result" and e["tool"] == "query_graph"
        for r in e["result"]["results"]
        if r["source"] == PERSON[0]
    ]
    assert "Maria Chen — works from — Lisbon" in passage["text"]
    [citation] = final_citations(alice)
    assert (citation["source"], citation["source_kind"]) == (PERSON[0], "graph")
    assert f"[{passage['ref']}]" in "".join(e["delta"] for e in alice if e["type"] == "answer")

    bob = await ask(api, who["bob"])
    [found] = graph_sources(bob)
    assert found == {PROJECT[0]}
    shown = json.dumps([e for e in bob if e["type"] in ("tool_result", "citations")])
    assert "Lisbon" not in shown and "Elena Petrova" not in shown
    assert final_citations(bob) == []


async def test_multi_mode_gathers_the_graph_and_the_judges_requery_walks_it_too(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(script)
    api = await start_api(llm, retrieval=retrieval, api_key_cache_s=0)
    who = await corpus(api)
    described = await api.http.get("/api/v1/graph?mode=multi", headers=api.auth(who["bob"]))
    assert [s["name"] for s in described.json()["sources"]] == [
        "documents",
        "graph",
        "memory",
        "web",
    ]
    assert "%% gather sources: documents, graph, memory, web" in described.json()["mermaid"]
    await ask(api, who["alice"], mode="multi")
    assert planner_sources(llm) == ["documents", "graph"]  # the tenant chose none

    # The graph alone, so every merged passage is the graph's (a chunk the documents
    # search also found would be one passage, shown as whichever source ranked it higher).
    chosen = await api.http.put(
        "/api/v1/settings", json={"sources": ["graph"]}, headers=api.auth(who["admin"])
    )
    assert chosen.status_code == 200, chosen.text
    for name, sees in (("alice", True), ("bob", False)):
        events = await ask(api, who[name], mode="multi")
        merges = [e for e in events if e["type"] == "citations" and e["agent"] == "merge"]
        assert len(merges) == 2, name  # the gather, then the last judge's re-query
        for merge in merges:
            assert {c["source_kind"] for c in merge["items"]} == {"graph"}, name
            sources = {c["source"] for c in merge["items"]}
            assert sources == ({PROJECT[0], PERSON[0]} if sees else {PROJECT[0]}), name
        texts = json.dumps(events)
        assert ("Lisbon" in texts) is sees, name
        cited = {(c["source"], c["source_kind"]) for c in final_citations(events)}
        assert cited == ({(PERSON[0], "graph")} if sees else set()), name


async def test_deleting_a_document_removes_its_facts_and_uploading_it_again_replaces_them(
    start_api: StartApi, retrieval: Retrieval, store_backend: dict[str, Any]
) -> None:
    api = await start_api(ScriptedLLM(script), retrieval=retrieval, **store_backend)
    who = await corpus(api)
    facts = api.stores.facts
    assert facts is not None
    assert await facts.count("t1", who["person"]) == 2

    edited = (PERSON[0], PERSON[1].replace(b"Lisbon", b"Porto"))
    again = await upload(api, who["admin"], edited, acl="hr")
    assert again["doc_id"] == who["person"] and again["facts"] == 2
    office = {
        f.triple.object
        for f in await facts.find("t1", {"hr"}, {"maria chen"}, limit=20)
        if f.triple.relation == "works from"
    }
    assert office == {"Porto office"}  # the old version's facts went with it

    gone = await api.http.delete(
        f"/api/v1/documents/{who['person']}", headers=api.auth(who["admin"])
    )
    assert gone.status_code == 204

    async def removed() -> bool:
        return await facts.count("t1", who["person"]) == 0

    await wait_for(removed, within=20)
    [found] = graph_sources(await ask(api, who["alice"]))
    assert found == {PROJECT[0]}
    assert await facts.count("t1") == 1  # the project's own fact stays
