"""What a tenant and a question choose reaches the model: an OpenAI-compatible server that
records every request it receives stands in for the LLM (issue 14, items 1, 3 and 4)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from agents.llm.observed import ObservedLLM
from agents.llm.openai_compat import OpenAICompatLLM
from agents.settings import AgentSettings
from api.compose.roles import make_llm
from bus import keys
from bus.store import KeyRole
from tests.integration.api.conftest import StartApi, until_done
from tests.integration.api.test_admission import reply
from tests.integration.api.test_rest import sse
from tests.integration.llm.fake_openai_server import FakeOpenAIServer

MODELS = "m-default,m-small,m-big"


@pytest.fixture
async def served() -> AsyncIterator[Callable[..., Any]]:
    """Call with agent settings: a recording server and the adapter the settings make."""
    servers: list[FakeOpenAIServer] = []
    llms: list[OpenAICompatLLM] = []

    def make(**agent_settings: Any) -> tuple[FakeOpenAIServer, ObservedLLM]:
        server = FakeOpenAIServer(models=MODELS.split(",")).start()
        servers.append(server)
        settings = AgentSettings(
            llm="openai",
            llm_base_url=server.base_url,
            llm_api_key="test-key",  # pyright: ignore[reportArgumentType]
            llm_models=MODELS,
            **agent_settings,
        )
        llm = make_llm(settings)  # what a deployment runs: the adapter, priced and traced
        assert isinstance(llm, ObservedLLM) and isinstance(llm.inner, OpenAICompatLLM)
        llms.append(llm.inner)
        return server, llm

    yield make
    for llm in llms:
        await llm.aclose()
    for server in servers:
        server.stop()


def bodies(server: FakeOpenAIServer) -> list[dict[str, Any]]:
    """The request bodies the server received."""
    return [r["body"] for r in server.requests]


def models_of(server: FakeOpenAIServer) -> list[str]:
    return [b["model"] for b in bodies(server)]


def system_of(body: dict[str, Any]) -> str:
    return body["messages"][0]["content"]


async def test_the_question_and_tenant_model_reach_every_call(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    key = await api.key()
    admin = await api.key(role=KeyRole.ADMIN, subject="root")
    every = {"user_models": ["*"]}  # users choose any served model (unset: the tenant's)
    assert (await api.http.put("/api/v1/settings", json=every, headers=api.auth(admin))).is_success
    listed = await api.http.get("/api/v1/models", headers=api.auth(key))
    assert listed.json() == {
        "models": MODELS.split(","),
        "default": "m-default",
        "effective": "m-default",
    }

    run = await api.http.post(
        "/api/v1/runs",
        json={"question": "What is 23 × 19?", "settings": {"model": "m-big"}},
        headers=api.auth(key),
    )
    assert (await sse(api, key, run.json()["run_id"]))[-1]["status"] == "done"
    assert len(server.requests) == 2 and set(models_of(server)) == {"m-big"}  # tool, answer

    refused = await api.http.post(
        "/api/v1/runs",
        json={"question": "Hi", "settings": {"model": "gpt-unlisted"}},
        headers=api.auth(key),
    )
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"

    bad = await api.http.put("/api/v1/settings", json={"model": "x"}, headers=api.auth(admin))
    assert bad.status_code == 403 and bad.json()["error"]["code"] == "model_not_allowed"
    ok = await api.http.put(
        "/api/v1/settings", json={"model": "m-small"} | every, headers=api.auth(admin)
    )
    assert ok.status_code == 200 and ok.json()["effective"]["model"] == "m-small"
    server.requests.clear()
    conn = await api.ws(key)
    await conn.send(json.dumps({"type": "ask", "question": "What is 23 × 19?"}))
    assert (await until_done(conn))[-1]["status"] == "done"
    assert set(models_of(server)) == {"m-small"}  # the tenant's model

    server.requests.clear()
    ask = {"type": "ask", "question": "What is 23 × 19?", "settings": {"model": "m-big"}}
    await conn.send(json.dumps(ask))
    assert (await until_done(conn))[-1]["status"] == "done"
    assert set(models_of(server)) == {"m-big"}  # the question's, over the tenant's


async def test_admins_decide_which_models_users_may_choose(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    admin = await api.key(role=KeyRole.ADMIN, subject="root")
    user = await api.key()
    unserved = await api.http.put(
        "/api/v1/settings", json={"user_models": ["gpt-unlisted"]}, headers=api.auth(admin)
    )
    put = await api.http.put(
        "/api/v1/settings", json={"user_models": ["m-small"]}, headers=api.auth(admin)
    )

    async def ask(key: str, model: str) -> httpx.Response:
        body = {"question": "What is 23 × 19?", "settings": {"model": model}}
        return await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))

    refused = await ask(user, "m-big")
    allowed, default = await ask(user, "m-small"), await ask(user, "m-default")
    by_admin = await ask(admin, "m-big")
    listed = (await api.http.get("/api/v1/models", headers=api.auth(user))).json()
    for run in (allowed, default, by_admin):
        assert (await sse(api, user if run is not by_admin else admin, run.json()["run_id"]))[-1][
            "status"
        ] == "done"

    assert unserved.status_code == 403 and put.status_code == 200
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "model_not_allowed"
    assert refused.json()["error"]["field"] == "settings.model"
    assert (allowed.status_code, default.status_code, by_admin.status_code) == (202, 202, 202)
    assert listed["models"] == ["m-default", "m-small"]  # what this user may pick
    assert set(models_of(server)) == {"m-small", "m-default", "m-big"}


async def test_an_agent_model_reaches_only_that_agent(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    admin = await api.key(role=KeyRole.ADMIN, subject="root")
    config = {"agents": [{"name": "critic", "model": "m-small"}]}
    refused = await api.http.put(
        "/api/v1/agents/config",
        json={"agents": [{"name": "critic", "model": "nope"}]},
        headers=api.auth(admin),
    )
    saved = await api.http.put("/api/v1/agents/config", json=config, headers=api.auth(admin))
    assert refused.status_code == 403 and saved.status_code == 200
    assert {a["name"]: a["model"] for a in saved.json()["agents"]}["critic"] == "m-small"

    run = await api.http.post(
        "/api/v1/runs",
        json={"question": "What is 23 × 19?", "settings": {"mode": "multi"}},
        headers=api.auth(admin),
    )
    assert (await sse(api, admin, run.json()["run_id"]))[-1]["status"] == "done"
    by_agent = {system_of(b).split(".")[0]: b["model"] for b in bodies(server)}
    assert by_agent["You are the critic"] == "m-small"
    assert by_agent["You are the planner of a team of agents"] == "m-default"
    # The critic's fact-check (here its recompute of 23 × 19) is the critic's too; nobody
    # else's model changed.
    critics = ("You are the critic", "You check a draft")
    assert by_agent["You check a draft answer by recomputing it"] == "m-small"
    others = {b["model"] for b in bodies(server) if not system_of(b).startswith(critics)}
    assert others == {"m-default"}


async def test_an_external_question_chooses_like_rest_and_bad_fields_are_refused(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    key = await api.key()
    admin = await api.key(role=KeyRole.ADMIN, subject="root")
    allow = {"user_models": ["m-big"]}
    assert (await api.http.put("/api/v1/settings", json=allow, headers=api.auth(admin))).is_success

    async def publish(settings: dict[str, Any], reply_to: str) -> None:
        question = {"api_key": key, "question": "What is 23 × 19?", "reply_to": reply_to}
        await api.redis.xadd(keys.QUESTIONS_STREAM, {"data": json.dumps(question | settings)})

    await publish({"settings": {"model": "m-big", "max_tool_hops": 3}}, "r.ok")
    [done] = await reply(api, "r.ok")
    assert done.status == "done" and set(models_of(server)) == {"m-big"}
    for n, settings in enumerate(
        [{"model": "nope"}, {"max_tool_hops": 99}, {"human_gate": True}, {"sources": ["web"]}]
    ):
        await publish({"settings": settings}, f"r.bad{n}")
        [rejected] = await reply(api, f"r.bad{n}")
        expected = "model_not_allowed" if "model" in settings else "invalid_question"
        assert (rejected.status, rejected.stop_reason) == ("rejected", expected), settings
        # REST refuses the same fields, with a code too.
        rest = await api.http.post(
            "/api/v1/runs", json={"question": "q", "settings": settings}, headers=api.auth(key)
        )
        code = "model_not_allowed" if "model" in settings else "invalid_request"
        assert rest.json()["error"]["code"] == code, settings


async def test_think_reaches_the_server_as_configured_and_reasoning_streams(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served(llm_think_param="chat_template_kwargs")
    api = await start_api(llm, llm_models=MODELS)
    key = await api.key()
    for think in (True, False):
        server.requests.clear()
        run = await api.http.post(
            "/api/v1/runs",
            json={"question": "What is 23 × 19?", "settings": {"think": think}},
            headers=api.auth(key),
        )
        events = await sse(api, key, run.json()["run_id"])
        kwargs = [b["chat_template_kwargs"] for b in bodies(server)]
        assert kwargs and all(k == {"enable_thinking": think} for k in kwargs)
        assert any(e["type"] == "reasoning" for e in events) is think


async def test_reasoning_effort_is_sent_only_when_think_is_on(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served(llm_think_param="reasoning_effort")
    api = await start_api(llm, llm_models=MODELS)
    key = await api.key()
    run = await api.http.post(
        "/api/v1/runs",
        json={"question": "What is 23 × 19?", "settings": {"think": True}},
        headers=api.auth(key),
    )
    assert (await sse(api, key, run.json()["run_id"]))[-1]["status"] == "done"
    assert [b.get("reasoning_effort") for b in bodies(server)] == ["medium", "medium"]
