"""Choosing a model is a privilege (issue 45, item 2): over real HTTP, a user key runs on
its tenant's model unless an admin lists others in ``user_models``; admin keys choose any
served model; a tenant that existed before keeps every served model (migration 0021).

An OpenAI-compatible server that records each request stands in for the LLM, so what a
test asserts is the model a call really reached.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from api.credentials import create_key
from bus.store import ApiKeyStore, KeyRole, make_engine, upgrade_async
from tests.integration.api.conftest import Api, StartApi
from tests.integration.api.test_models_reach_the_llm import MODELS, models_of, served
from tests.integration.api.test_rest import sse

__all__ = ["served"]  # the fixture, shared with the models' other tests

QUESTION = "What is 23 × 19?"


async def ask(api: Api, key: str, model: str | None) -> httpx.Response:
    """POST /api/v1/runs with ``settings.model`` (None: no model chosen)."""
    settings = {} if model is None else {"model": model}
    body = {"question": QUESTION, "settings": settings}
    return await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))


async def finished(api: Api, key: str, started: httpx.Response) -> None:
    assert started.status_code == 202, started.text
    assert (await sse(api, key, started.json()["run_id"]))[-1]["status"] == "done"


async def test_a_user_key_without_user_models_runs_on_the_tenant_model_only(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    user = await api.key()
    admin = await api.key(role=KeyRole.ADMIN, subject="root")

    refused = await ask(api, user, "m-big")
    error = refused.json()["error"]
    assert refused.status_code == 403 and error["code"] == "model_not_allowed"
    assert error["field"] == "settings.model" and "user_models" in error["message"]
    listed = (await api.http.get("/api/v1/models", headers=api.auth(user))).json()
    assert listed["models"] == ["m-default"]  # the tenant's model, nothing else to pick

    await finished(api, user, await ask(api, user, None))
    await finished(api, user, await ask(api, user, "m-default"))
    assert set(models_of(server)) == {"m-default"}
    server.requests.clear()
    await finished(api, admin, await ask(api, admin, "m-big"))  # admins keep choosing
    assert set(models_of(server)) == {"m-big"}


async def test_user_models_lists_what_users_may_choose_and_star_means_every_served_model(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    user = await api.key()
    admin = await api.key(role=KeyRole.ADMIN, subject="root")

    async def allow(models: list[str]) -> None:
        put = await api.http.put(
            "/api/v1/settings", json={"user_models": models}, headers=api.auth(admin)
        )
        assert put.status_code == 200, put.text

    await allow(["m-small"])
    unlisted = await ask(api, user, "m-big")
    await finished(api, user, await ask(api, user, "m-small"))
    assert unlisted.status_code == 403 and "user_models" in unlisted.json()["error"]["message"]
    assert set(models_of(server)) == {"m-small"}

    await allow(["*"])
    server.requests.clear()
    await finished(api, user, await ask(api, user, "m-big"))
    listed = (await api.http.get("/api/v1/models", headers=api.auth(user))).json()
    assert set(models_of(server)) == {"m-big"} and listed["models"] == MODELS.split(",")
    # "*" is no model name: it is never checked against the served list, nor sent.
    unserved = await ask(api, user, "*")
    assert unserved.status_code == 403


async def test_the_openai_model_field_picks_a_mode_and_never_an_llm(
    start_api: StartApi, served: Callable[..., Any]
) -> None:
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS)
    user = await api.key()

    async def chat(model: str) -> httpx.Response:
        body = {"model": model, "messages": [{"role": "user", "content": QUESTION}]}
        return await api.http.post(
            "/v1/chat/completions", json=body, headers=api.auth(user), timeout=60
        )

    served_llm = await chat("m-big")
    answered = await chat("agentbus")
    assert served_llm.status_code == 404
    assert served_llm.json()["error"]["code"] == "model_not_found"
    assert answered.status_code == 200, answered.text
    assert set(models_of(server)) == {"m-default"}  # the tenant's model, not one a user named


async def test_a_tenant_from_before_the_migration_keeps_every_served_model(
    start_api: StartApi, served: Callable[..., Any], tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'old.db'}"
    await upgrade_async(url, "0020")  # a database of the release before
    engine = make_engine(url)
    try:
        old_key = (await create_key(ApiKeyStore(engine), "old", "alice")).key
    finally:
        await engine.dispose()
    server, llm = served()
    api = await start_api(llm, llm_models=MODELS, database_url=url)  # migrates to the head
    new_key = await api.key("new", "bob")

    await finished(api, old_key, await ask(api, old_key, "m-big"))
    refused = await ask(api, new_key, "m-big")
    assert set(models_of(server)) == {"m-big"}
    assert refused.status_code == 403
    view = (await api.http.get("/api/v1/settings", headers=api.auth(old_key))).json()
    assert view["effective"]["user_models"] == ["*"]
