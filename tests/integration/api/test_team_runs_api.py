"""A question that names a team: it runs the team's version current when it was posted,
an edit made while it runs changes nothing of it, and a team the tenant does not have (or
one a run cannot follow yet) is refused before anything is published."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from agents.llm.scripted import ScriptedLLM
from bus import keys
from bus.commands import AgentTask, Command
from bus.run_state import RunSettings
from bus.store import KeyRole
from tests.integration.agents.teams.examples import FRENCH, team_turn
from tests.integration.api.conftest import StartApi
from tests.integration.api.test_a2a import connect, question, send
from tests.integration.api.test_rest import wait_status
from tests.support import stream_commands

EXAMPLES = Path(__file__).parents[3] / "docs" / "teams"
YAML = {"Content-Type": "application/yaml"}


def settings_of(command: Command) -> RunSettings:
    """The run settings an intake command carries."""
    assert isinstance(command.payload, AgentTask)
    return command.payload.state.settings


async def test_a_run_keeps_the_version_it_started_with_through_an_edit(
    start_api: StartApi,
) -> None:
    api = await start_api(ScriptedLLM(team_turn, latency=0.3))
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    user = await api.key()
    text = (EXAMPLES / "translate.yaml").read_text()
    assert (
        await api.http.put("/api/v1/teams/translate", content=text, headers=admin | YAML)
    ).status_code == 200

    body = {"question": "Quelle est la capitale de la France ?", "settings": {"team": "translate"}}
    first = await api.http.post("/api/v1/runs", json=body, headers=api.auth(user))
    assert first.status_code == 202, first.text
    # While it runs, the translator is told something else (it would answer "437").
    edited = text.replace("Translate the answer you are given", "Summarise the answer")
    put = await api.http.put("/api/v1/teams/translate", content=edited, headers=admin | YAML)
    assert put.json()["version"] == 2

    run = await wait_status(api, user, first.json()["run_id"])
    assert (run["status"], run["answer"]) == ("done", FRENCH)
    later = await api.http.post("/api/v1/runs", json=body, headers=api.auth(user))
    assert (await wait_status(api, user, later.json()["run_id"]))["answer"] == "437"
    pinned = [settings_of(c).team for c in await stream_commands(api.redis, keys.Role.INTAKE)]  # type: ignore[union-attr]
    assert [(t.name, t.version) for t in pinned if t is not None] == [
        ("translate", 1),
        ("translate", 2),
    ]


async def test_an_unknown_team_is_refused_and_nothing_is_published(start_api: StartApi) -> None:
    api = await start_api()
    user = await api.key()
    body = {"question": "Hello?", "settings": {"team": "nobody"}}

    refused = await api.http.post("/api/v1/runs", json=body, headers=api.auth(user))

    assert refused.status_code == 404
    error = refused.json()["error"]
    assert (error["code"], error["field"]) == ("team_not_found", "settings.team")
    assert await stream_commands(api.redis, keys.Role.INTAKE) == []
    listed = (await api.http.get("/api/v1/runs", headers=api.auth(user))).json()
    assert listed["runs"] == []


async def test_a_team_a_run_cannot_follow_yet_is_refused_naming_the_node(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    team = {
        "agents": [{"name": "drafter", "instructions": "Draft."}],
        "edges": [
            {"from": "intake", "on": "admitted", "to": "drafter"},
            {"from": "drafter", "on": "answer", "to": "critic"},
            {"from": "critic", "on": "ok", "to": "finalizer"},
            {"from": "critic", "on": "revise", "to": "researcher"},
            {"from": "critic", "on": "replan", "to": "finalizer"},
            {"from": "critic", "on": "recheck", "to": "finalizer"},
            {"from": "critic", "on": "fact_check", "to": "finalizer"},
            {"from": "researcher", "on": "answer", "to": "finalizer"},
        ],
    }
    stored = await api.http.put("/api/v1/teams/judged", json=team, headers=admin)
    assert stored.status_code == 200, stored.text

    body = {"question": "Hello?", "settings": {"team": "judged"}}
    refused = await api.http.post("/api/v1/runs", json=body, headers=admin)

    assert refused.status_code == 422
    error = refused.json()["error"]
    assert error["code"] == "team_not_runnable"
    named = {(f["pointer"], f["code"]) for f in error["faults"]}
    assert {("/edges/3/to", "node_not_runnable"), ("/edges/5/on", "outcome_not_runnable")} <= named
    assert not any(p == "/edges/1/to" for p, _ in named)  # the critic itself can run
    assert await stream_commands(api.redis, keys.Role.INTAKE) == []


async def test_naming_a_built_in_mode_as_the_team_runs_that_mode(start_api: StartApi) -> None:
    api = await start_api()
    user = await api.key()
    body = {"question": "23 × 19?", "settings": {"team": "multi"}}

    posted = await api.http.post("/api/v1/runs", json=body, headers=api.auth(user))

    assert posted.status_code == 202, posted.text
    [command] = await stream_commands(api.redis, keys.Role.INTAKE)
    settings = settings_of(command)
    assert (settings.mode, settings.team) == ("multi", None)


async def test_an_openai_client_runs_a_team_by_its_model_name(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(team_turn))
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    user = await api.key()
    text = (EXAMPLES / "translate.yaml").read_text()
    await api.http.put("/api/v1/teams/translate", content=text, headers=admin | YAML)

    async with openai.AsyncOpenAI(base_url=api.base + "/v1", api_key=user, max_retries=0) as oai:
        answered = await oai.chat.completions.create(
            model="agentbus-team-translate",
            messages=[{"role": "user", "content": "Quelle est la capitale de la France ?"}],
        )
        with pytest.raises(openai.NotFoundError):
            await oai.chat.completions.create(
                model="agentbus-team-nobody", messages=[{"role": "user", "content": "Hi"}]
            )

    assert answered.choices[0].message.content == FRENCH


async def test_an_a2a_message_runs_a_team_named_by_its_skill(start_api: StartApi) -> None:
    api = await start_api(ScriptedLLM(team_turn))
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    user = await api.key()
    text = (EXAMPLES / "translate.yaml").read_text()
    await api.http.put("/api/v1/teams/translate", content=text, headers=admin | YAML)

    async with connect(api, user, streaming=False) as client:
        updates = await send(client, question("Quelle est la capitale ?", skill="team:translate"))
    task = next(u.task for u in updates if u.HasField("task"))
    run = await wait_status(api, user, task.id)

    assert (run["status"], run["answer"]) == ("done", FRENCH)
