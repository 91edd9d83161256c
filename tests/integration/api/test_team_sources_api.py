"""The sources a team run gathers before its first agent: the ones that agent declares
when the run names none of its own (decided at admission, with the team's version), the
run's own when it names some, even none (scripted model, real Redis, the REST edge)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agents.llm.ports import ChatMessage, LLMEvent, LLMOptions, ToolDefinition
from agents.llm.scripted import ScriptedLLM, text, turn
from bus import keys
from bus.store import KeyRole
from retrieval.stack import Retrieval
from tests.integration.agents.roles.test_retrieval_flow import retrieval as retrieval
from tests.integration.api.catalogue import catalogue_a_document
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_rest import sse
from tests.integration.api.test_team_runs_api import settings_of
from tests.support import stream_commands

#: A writer that reads the documents, after a gather of the run's sources.
SOURCED: dict[str, Any] = {
    "agents": [
        {"name": "writer", "instructions": "Answer from the passages.", "sources": ["documents"]}
    ],
    "edges": [
        {"from": "intake", "on": "admitted", "to": "gather", "when": "has_sources"},
        {"from": "intake", "on": "admitted", "to": "writer"},
        {"from": "gather", "on": "gathered", "to": "merge"},
        {"from": "merge", "on": "merged", "to": "writer"},
        {"from": "writer", "on": "answer", "to": "finalizer"},
    ],
}
CITED = "Invoices go out on the first working day [1]."


def writer(
    messages: Sequence[ChatMessage], tools: Sequence[ToolDefinition], options: LLMOptions
) -> list[LLMEvent]:
    """Cites the first passage when it was shown one; answers from memory otherwise."""
    shown = any(m.role == "system" and m.content.startswith("Evidence") for m in messages)
    return turn(text(CITED if shown else "Monthly."))


async def tenant(api: Api) -> tuple[dict[str, str], str]:
    """The tenant's admin headers (the team stored) and a user's key."""
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    put = await api.http.put("/api/v1/teams/sourced", json=SOURCED, headers=admin)
    assert put.status_code == 200, put.text
    await catalogue_a_document(api)  # the tenant has documents (and their graph)
    return admin, await api.key()


async def run(api: Api, user: str) -> list[dict[str, Any]]:
    body = {"question": "When are invoices sent?", "settings": {"team": "sourced"}}
    posted = await api.http.post("/api/v1/runs", json=body, headers=api.auth(user))
    assert posted.status_code == 202, posted.text
    return await sse(api, user, posted.json()["run_id"])


async def gathered(api: Api) -> list[list[str]]:
    """The sources each run was admitted with, in order."""
    return [settings_of(c).sources for c in await stream_commands(api.redis, keys.Role.INTAKE)]


async def test_a_run_naming_no_sources_gathers_what_its_first_agent_declares(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(writer)
    api = await start_api(llm, retrieval=retrieval, api_key_cache_s=0)
    _, user = await tenant(api)

    events = await run(api, user)

    done = events[-1]
    assert (done["type"], done["status"], done["answer"]) == ("done", "done", CITED)
    # Its documents only: not the graph the tenant's other runs gather from too.
    assert await gathered(api) == [["documents"]]
    [request] = llm.requests
    context = [m.content for m in request[0] if m.role == "system"][-1]
    assert "[1] (documents: Billing) Invoices are sent" in context
    [kept] = [e for e in events if e["type"] == "citations" and e["agent"] == "finalizer"]
    assert [(c["ref"], c["source"]) for c in kept["items"]] == [(1, "billing.md")]


async def test_the_sources_a_run_names_win_over_the_agents_even_none(
    start_api: StartApi, retrieval: Retrieval
) -> None:
    llm = ScriptedLLM(writer)
    api = await start_api(llm, retrieval=retrieval, api_key_cache_s=0)
    admin, user = await tenant(api)

    for chosen in ([], ["graph"]):
        put = await api.http.put("/api/v1/settings", json={"sources": chosen}, headers=admin)
        assert put.status_code == 200, put.text
        assert (await run(api, user))[-1]["answer"] == "Monthly."

    assert await gathered(api) == [[], ["graph"]]
    # Neither run showed the writer a passage: none gathered, then the graph found none.
    shown = [m for r in llm.requests for m in r[0] if m.role == "system"]
    assert not any("Evidence" in m.content for m in shown)
