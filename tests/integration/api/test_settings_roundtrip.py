"""Settings that must not undo themselves (issue 27, item 6): a partial PUT of the agents'
config changes only what it names; the graph follows accuracy; "the default sources" and
"no sources" are different values."""

from __future__ import annotations

from typing import Any

from bus import keys, wire
from bus.commands import AgentTask
from bus.store import KeyRole
from tests.integration.api.catalogue import catalogue_a_document


async def published_settings(api: Any, run_id: str) -> Any:
    """The settings a run was published with (its intake command)."""
    for _, fields in await api.redis.xrange(keys.role_stream(keys.Role.INTAKE, 0)):
        command = wire.decode_command(fields)
        if command.run_id == run_id:
            assert isinstance(command.payload, AgentTask)
            return command.payload.state.settings
    raise AssertionError(f"run {run_id} was not published")


async def test_a_put_naming_one_agent_keeps_the_others(start_api: Any) -> None:
    api = await start_api(llm_models="m-default,m-small")
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    first = {
        "agents": [
            {"name": "planner", "prompt": "Plan in one step.", "model": "m-small"},
            {"name": "critic", "prompt": "Be brief."},
        ],
        "researcher_tools": ["calculator"],
    }
    assert (await api.http.put("/api/v1/agents/config", json=first, headers=admin)).is_success
    # The page's Agents panel sends prompts only; a script may name one agent.
    second = {"agents": [{"name": "critic", "prompt": "Be thorough."}]}
    saved = await api.http.put("/api/v1/agents/config", json=second, headers=admin)
    agents = {a["name"]: a for a in saved.json()["agents"]}
    assert agents["planner"]["prompt"] == "Plan in one step."
    assert agents["planner"]["model"] == "m-small"  # not wiped by a save that omits it
    assert agents["critic"]["prompt"] == "Be thorough."
    assert saved.json()["researcher_tools"] == ["calculator"]
    # What a field names does change: an empty prompt and null model are the defaults again.
    reset = {"agents": [{"name": "planner", "prompt": "", "model": None}], "researcher_tools": None}
    done = (await api.http.put("/api/v1/agents/config", json=reset, headers=admin)).json()
    planner = next(a for a in done["agents"] if a["name"] == "planner")
    assert (planner["prompt"], planner["model"], done["researcher_tools"]) == ("", None, None)
    bad = await api.http.put(
        "/api/v1/agents/config", json={"agents": [{"name": "poet"}]}, headers=admin
    )
    after = (await api.http.get("/api/v1/agents/config", headers=admin)).json()
    assert bad.status_code == 422 and after == done  # refused, and nothing written


async def test_the_graph_follows_accuracy(start_api: Any) -> None:
    api = await start_api()
    user = api.auth(await api.key())

    def targets(doc: dict[str, Any]) -> set[str]:
        return {e["target"] for e in doc["edges"]}

    standard = await api.http.get("/api/v1/graph?mode=multi&accuracy=standard", headers=user)
    accurate = await api.http.get("/api/v1/graph?mode=multi&accuracy=accurate", headers=user)
    assert "verifier" not in targets(standard.json()) and "verifier" in targets(accurate.json())
    assert "verifier" not in standard.json()["mermaid"]  # the drawing and the edges agree


async def test_default_sources_and_no_sources_are_different_values(start_api: Any) -> None:
    api = await start_api(egress_enabled=True)  # with egress on, the defaults include web
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    ask = {"question": "q?", "settings": {"mode": "multi"}}

    none = await api.http.put("/api/v1/settings", json={"sources": []}, headers=admin)
    assert none.json()["preferences"]["sources"] == []
    run = (await api.http.post("/api/v1/runs", json=ask, headers=admin)).json()
    assert (await published_settings(api, run["run_id"])).sources == []

    default = await api.http.put("/api/v1/settings", json={"sources": None}, headers=admin)
    assert default.json()["preferences"]["sources"] is None
    run = (await api.http.post("/api/v1/runs", json=ask, headers=admin)).json()
    assert "web" in (await published_settings(api, run["run_id"])).sources


async def test_single_mode_searches_the_documents_first_unless_the_tenant_turns_it_off(
    start_api: Any,
) -> None:
    api = await start_api(egress_enabled=True)
    await catalogue_a_document(api, uploaded_by="root")
    ask = {"question": "q?", "settings": {"mode": "single"}}

    async def sources(headers: dict[str, str]) -> list[str]:
        run = (await api.http.post("/api/v1/runs", json=ask, headers=headers)).json()
        return (await published_settings(api, run["run_id"])).sources

    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    assert await sources(admin) == ["documents"]  # the documents only, never the web
    other = api.auth(await api.key("t2", "bob"))
    assert await sources(other) == []  # a tenant without documents has nothing to search
    off = await api.http.put("/api/v1/settings", json={"single_context": False}, headers=admin)
    assert off.status_code == 200 and off.json()["preferences"]["single_context"] is False
    assert await sources(admin) == []
