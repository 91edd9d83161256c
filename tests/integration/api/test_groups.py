"""ACL groups reach users: a key's groups ride with its runs into every retrieval.

t1 holds a ``finance`` document and a document for everyone; t2 holds its own ``finance``
document. alice (t1, finance) must find t1's finance document through single mode
(``search_docs``), multi-mode gather, the judge's re-query and its tool pass; bob (t1, no
group) and carol (t2, finance) never may.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agents.llm.ports import ChatMessage, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, Turn, benchmark_turn, text, tool_call, turn
from api.streams.admission import run_id_for
from bus import keys
from bus.store import KeyRole
from retrieval.embedders.hashing import HashingEmbedder
from retrieval.ingest import prepare
from retrieval.loaders import parse
from retrieval.settings import RetrievalSettings
from retrieval.stack import Retrieval, open_retrieval
from tests.conftest import TEST_REDIS_URL
from tests.integration.api.catalogue import catalogue_a_document
from tests.integration.api.conftest import StartApi, recv, until_done
from tests.integration.api.test_admission import reply
from tests.integration.api.test_gates_api import paused
from tests.integration.api.test_rest import sse
from tests.processes import cli
from tests.support import events_of

SECRET = "budget.md"  # t1, finance only
PUBLIC = "handbook.md"  # t1, everyone
OTHER = "t2-budget.md"  # t2, finance only
DOCS = [
    ("t1", SECRET, ["finance"], "# Budget\n\nThe finance budget for next year is 42 million."),
    ("t1", PUBLIC, [], "# Handbook\n\nThe budget handbook explains budget requests."),
    ("t2", OTHER, ["finance"], "# Budget\n\nTenant two's budget is 7 million."),
]


@pytest.fixture
async def retrieval(tmp_path: Path) -> AsyncIterator[Retrieval]:
    settings = RetrievalSettings(data_dir=tmp_path, embedder="hashing")
    async with open_retrieval(settings, embedder=HashingEmbedder(), path=tmp_path / "q") as r:
        for tenant, source, acl, body in DOCS:
            doc = parse(body.encode(), source=source)
            prepared = prepare(doc, tenant=tenant, acl=acl, chunking=r.chunking)
            await r.ingestor.ingest(prepared, tenant=tenant)
        yield r


def searcher(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> Turn:
    """Researchers and the judge's tool pass search the documents once, then answer."""
    first = messages[0].content if messages[0].role == "system" else ""
    judging = options.response_schema is not None or any(
        first.startswith(f"You are the {role}") for role in ("planner", "critic", "verifier")
    )
    if judging:
        return benchmark_turn(messages, tools, options)
    if messages[-1].role == "tool" or not any(t.name == "search_docs" for t in tools):
        return turn(text("Here is what the documents say."))
    return turn(tool_call("search_docs", {"query": "budget"}))


async def catalogued(api: Any) -> None:
    """The tenants' catalogues, as an upload leaves them (the fixture ingests directly)."""
    for tenant in ("t1", "t2"):
        await catalogue_a_document(api, tenant_id=tenant)


async def people(api: Any) -> dict[str, str]:
    """Keys: alice and bob of t1 (made through the API), carol of t2 in a same-named group."""
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    made = {}
    for name, groups in (("alice", ["finance"]), ("bob", [])):
        body = {"subject": name, "groups": groups}
        resp = await api.http.post("/api/v1/keys", json=body, headers=api.auth(admin))
        assert resp.status_code == 201 and resp.json()["groups"] == groups, resp.text
        made[name] = resp.json()
    return {
        "alice": made["alice"]["key"],
        "bob": made["bob"]["key"],
        "carol": await api.key("t2", "carol", groups=("finance",)),
        "alice_id": made["alice"]["id"],
        "alice_secret": made["alice"]["signing_secret"],
    }


def found(events: list[dict[str, Any]]) -> set[str]:
    """Every document source the run's search_docs calls returned."""
    return {
        hit["source"]
        for e in events
        if e["type"] == "tool_result" and e["tool"] == "search_docs" and e["status"] == "ok"
        for hit in e["result"]["results"]
    }


EXPECTED = {"alice": {SECRET, PUBLIC}, "bob": {PUBLIC}, "carol": {OTHER}}


async def test_single_mode_search_docs_sees_the_keys_groups(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    api = await start_api(ScriptedLLM(searcher), retrieval=retrieval)
    await catalogued(api)
    who = await people(api)

    for name, expected in EXPECTED.items():
        body = {"question": "What is the budget?"}
        run = await api.http.post("/api/v1/runs", json=body, headers=api.auth(who[name]))
        events = await sse(api, who[name], run.json()["run_id"])
        assert found(events) == expected, name


async def test_multi_mode_gather_and_the_judges_requery_see_the_keys_groups(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    api = await start_api(ScriptedLLM(searcher), retrieval=retrieval)
    await catalogued(api)
    who = await people(api)
    for tenant in ("t1", "t2"):
        admin = await api.key(tenant, "root", KeyRole.ADMIN)
        prefs = {"mode": "multi", "sources": ["documents"]}
        put = await api.http.put("/api/v1/settings", json=prefs, headers=api.auth(admin))
        assert put.status_code == 200, put.text

    for name, expected in EXPECTED.items():
        conn = await api.ws(who[name])
        await conn.send(json.dumps({"type": "ask", "question": "What is the budget?"}))
        assert (await recv(conn))["type"] == "accepted"
        frames = await until_done(conn)
        merges = [f for f in frames if f["type"] == "citations" and f["agent"] == "merge"]
        assert len(merges) == 2, name  # the gather, then the last judge's re-query
        for merge in merges:
            assert {c["source"] for c in merge["items"]} == expected, name
        assert found(frames) == expected, name  # researcher's and fact-check's search_docs


async def test_a_signed_external_question_carries_the_keys_groups(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    api = await start_api(ScriptedLLM(searcher), retrieval=retrieval)
    await catalogued(api)
    who = await people(api)
    question = {"key_id": who["alice_id"], "signed_at": int(time.time()), "question": "budget?"}
    data = json.dumps(question | {"reply_to": "answers"})
    sig = hmac.new(who["alice_secret"].encode(), data.encode(), hashlib.sha256).hexdigest()

    entry = await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": data, "signature": sig})

    [result] = await reply(api, "answers")
    events = await events_of(api.redis, run_id_for(entry.decode()))
    assert result.status == "done"
    assert found([e.model_dump(mode="json") for e in events]) == {SECRET, PUBLIC}


async def test_a_resumed_run_goes_on_with_the_resumers_groups(start_api: StartApi) -> None:
    api = await start_api()
    admin = await api.key("t1", "root", KeyRole.ADMIN)
    prefs = {"mode": "multi", "human_gate": True}
    assert (await api.http.put("/api/v1/settings", json=prefs, headers=api.auth(admin))).is_success
    alice = await api.key("t1", "alice", groups=("finance",))
    run_id = await paused(api, alice)

    resumed = await api.http.post(
        f"/api/v1/runs/{run_id}/resume", json={"decision": "approve"}, headers=api.auth(alice)
    )

    assert resumed.status_code == 200, resumed.text
    rows = await api.redis.xrange(keys.role_stream(keys.Role.FINALIZER, 0))
    commands = [json.loads(fields[b"data"]) for _, fields in rows]
    assert [c["groups"] for c in commands if c["run_id"] == run_id] == [["finance"]]


def identity(groups: str, data_dir: Path) -> dict[str, str]:
    """The CLI's configured identity, on the test Redis."""
    return {
        "AGENTBUS_REDIS_URL": TEST_REDIS_URL,
        "AGENTBUS_DATA_DIR": str(data_dir),
        "AGENTBUS_TENANT": "t1",
        "AGENTBUS_GROUPS": groups,
    }


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


@pytest.mark.timeout(300)  # two CLI processes: each takes a while to start on a busy host
async def test_the_cli_runs_with_its_configured_groups(
    start_api: StartApi, retrieval: Retrieval, tmp_path: Path
) -> None:
    api = await start_api(ScriptedLLM(searcher), retrieval=retrieval)
    await catalogued(api)
    data = api.settings.bus.data_dir  # the CLI starts runs as the API does: same store

    # Two processes at once (a CLI process takes seconds to start on a busy host).
    asked, called = await asyncio.gather(
        cli(["ask", "budget?", "--json"], identity("finance,sales", data)),
        cli(["tools", "call", "search_docs", '{"query": "budget"}'], identity("", data)),
    )

    assert found(lines(asked)) == {SECRET, PUBLIC}
    assert {hit["source"] for hit in json.loads(called)["result"]["results"]} == {PUBLIC}
