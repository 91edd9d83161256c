"""Multi mode gathers from the sources that exist for the tenant when it chose none
(issue 14, item 10): documents and the knowledge graph once any are ingested, memory once
the conversation has history, the web only with egress on."""

from __future__ import annotations

from agents.llm.scripted import ScriptedLLM
from bus.store import KeyRole
from tests.integration.api.catalogue import catalogue_a_document
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_rest import sse


def planner_sources(llm: ScriptedLLM) -> list[str]:
    """The sources offered to the last planner call ([] when none were)."""
    system = [m for m, _, _ in llm.requests if m[0].content.startswith("You are the planner")]
    prompt = system[-1][0].content
    if "choose which retrieval sources" not in prompt:
        return []
    listed = prompt.split("from: ", 1)[1].split("; sources is a subset", 1)[0]
    return listed.split(", ")


async def ask(api: Api, key: str, conversation_id: str | None = None, mode: str = "multi") -> None:
    body = {"question": "What is 23 × 19?", "settings": {"mode": mode}}
    if conversation_id:
        body["conversation_id"] = conversation_id
    run = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert run.status_code == 202, run.text
    assert (await sse(api, key, run.json()["run_id"]))[-1]["type"] == "done"


async def test_the_sources_that_exist_are_gathered_by_default(start_api: StartApi) -> None:
    llm = ScriptedLLM()
    api = await start_api(llm, api_key_cache_s=0)
    key = await api.key()
    await ask(api, key)
    assert planner_sources(llm) == []  # nothing exists yet: nothing to gather

    await catalogue_a_document(api, uploaded_by="alice")
    await ask(api, key, conversation_id="conv-1")
    assert planner_sources(llm) == ["documents", "graph"]  # and the facts taken from them
    await ask(api, key, conversation_id="conv-1")  # the conversation has history now
    assert planner_sources(llm) == ["documents", "graph", "memory"]

    admin = await api.key(role=KeyRole.ADMIN, subject="root")
    put = await api.http.put(
        "/api/v1/settings", json={"egress_enabled": True}, headers=api.auth(admin)
    )
    assert put.status_code == 200
    await ask(api, key)
    assert planner_sources(llm) == ["documents", "graph", "web"]

    chosen = await api.http.put("/api/v1/settings", json={"sources": []}, headers=api.auth(admin))
    assert chosen.status_code == 200
    await ask(api, key)
    assert planner_sources(llm) == []  # the tenant's own choice wins, even none


def researcher_tools(llm: ScriptedLLM) -> list[str]:
    """The tools offered to the last model call (a single-mode run's researcher)."""
    return [t.name for t in llm.requests[-1][1]]


async def test_the_document_tools_are_offered_once_the_tenant_has_documents(
    start_api: StartApi,
) -> None:
    llm = ScriptedLLM()
    api = await start_api(llm, api_key_cache_s=0)
    key = await api.key()
    await ask(api, key, mode="single")
    offered = researcher_tools(llm)
    assert "calculator" in offered
    assert "search_docs" not in offered and "query_graph" not in offered

    await catalogue_a_document(api, uploaded_by="alice")
    await ask(api, key, mode="single")
    assert "query_graph" in researcher_tools(llm)  # (this API has no search_docs)
