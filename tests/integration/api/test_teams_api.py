"""/api/v1/teams: apply as YAML or JSON, versions, Mermaid, delete; an invalid team is a 422
naming each fault; admins only write; tenants apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bus.store import KeyRole

EXAMPLES = Path(__file__).parents[3] / "docs" / "teams"
YAML = {"Content-Type": "application/yaml"}


async def test_a_team_is_applied_versioned_drawn_and_deleted(start_api: Any) -> None:
    api = await start_api()
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    text = (EXAMPLES / "review.yaml").read_text()

    first = await api.http.put("/api/v1/teams/review", content=text, headers=admin | YAML)
    assert first.status_code == 200, first.text
    assert (first.json()["version"], first.json()["created_by"]) == (1, "root")
    edited = text.replace("attempts: 2", "attempts: 3")
    second = await api.http.put("/api/v1/teams/review", content=edited, headers=admin | YAML)
    assert second.json()["version"] == 2

    listed = (await api.http.get("/api/v1/teams", headers=admin)).json()["teams"]
    assert [(t["name"], t["version"]) for t in listed] == [
        ("single", 0),
        ("multi", 0),
        ("review", 2),
    ]
    assert listed[2]["agents"] == ["writer", "reviewer"]
    old = (await api.http.get("/api/v1/teams/review?version=1", headers=admin)).json()
    assert old["document"]["edges"][2]["attempts"] == 2
    for path in ("/api/v1/teams/review", "/api/v1/teams/multi/graph"):
        absent = await api.http.get(f"{path}?version=3", headers=admin)
        assert (absent.status_code, absent.json()["error"]["code"]) == (404, "team_not_found")
        beyond = await api.http.get(f"{path}?version={2**31}", headers=admin)
        assert beyond.status_code == 422, beyond.text
    drawn = (await api.http.get("/api/v1/teams/review/graph", headers=admin)).json()
    assert drawn["version"] == 2
    assert "reviewer -->|answer verdict=revise ≤3| writer" in drawn["mermaid"]

    gone = await api.http.delete("/api/v1/teams/review", headers=admin)
    assert gone.status_code == 204
    missing = await api.http.get("/api/v1/teams/review", headers=admin)
    assert (missing.status_code, missing.json()["error"]["code"]) == (404, "team_not_found")
    assert (await api.http.delete("/api/v1/teams/review", headers=admin)).status_code == 404


async def test_an_invalid_team_is_a_422_naming_each_fault_and_nothing_is_stored(
    start_api: Any,
) -> None:
    api = await start_api(llm_models="m-default,m-small")
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    team = {
        "agents": [
            {"name": "a", "instructions": "Answer.", "model": "m-huge", "tools": ["rm_rf"]},
            {"name": "b", "instructions": "Check."},
            {"name": "lonely", "instructions": "Nobody calls me."},
        ],
        "edges": [
            {"from": "intake", "on": "admitted", "to": "a"},
            {"from": "a", "on": "answer", "to": "b"},
            {"from": "b", "on": "answer", "to": "a"},
        ],
    }
    refused = await api.http.put("/api/v1/teams/broken", json=team, headers=admin)

    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "team_invalid"
    found = {(f["pointer"], f["code"]) for f in error["faults"]}
    assert found >= {
        ("/agents/0/model", "model_not_allowed"),
        ("/agents/0/tools/0", "tool_not_allowed"),
        ("/agents/2", "unreachable"),
        ("/edges/1", "unbounded_loop"),
    }
    assert (await api.http.get("/api/v1/teams/broken", headers=admin)).status_code == 404


async def test_users_read_teams_admins_write_them_and_tenants_stay_apart(start_api: Any) -> None:
    api = await start_api()
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    user = api.auth(await api.key("t1", "alice"))
    other = api.auth(await api.key("t2", "root", KeyRole.ADMIN))
    text = (EXAMPLES / "triage.yaml").read_text()

    denied = await api.http.put("/api/v1/teams/triage", content=text, headers=user | YAML)
    assert denied.status_code == 403
    assert (
        await api.http.put("/api/v1/teams/triage", content=text, headers=admin | YAML)
    ).is_success
    assert (await api.http.get("/api/v1/teams/triage", headers=user)).json()["version"] == 1
    assert (await api.http.get("/api/v1/teams/triage", headers=other)).status_code == 404
    reserved = await api.http.put("/api/v1/teams/multi", content=text, headers=admin | YAML)
    assert reserved.status_code == 422
    shipped = (await api.http.get("/api/v1/teams/multi/graph", headers=user)).json()
    assert "critic -->|revise| researcher" in shipped["mermaid"]
