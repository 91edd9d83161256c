"""Budgets over the API: an admin sets them in the settings, a question asks for less (never
more), a spent budget ends the run ``budget_exhausted``, and ``/api/v1/usage`` tells each
user their own spending and an admin the tenant's."""

from __future__ import annotations

from typing import Any

from bus.store import KeyRole
from tests.integration.api.conftest import StartApi
from tests.integration.api.test_rest import wait_status


async def test_an_admin_sets_budgets_and_a_question_stays_within_them(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    user_key = await api.key()
    user = api.auth(user_key)
    prefs = {"token_budget": 50_000, "user_daily_tokens": 100_000, "tenant_monthly_cost_usd": 5}
    saved = await api.http.put("/api/v1/settings", json=prefs, headers=admin)
    assert saved.status_code == 200
    assert saved.json()["effective"]["token_budget"] == 50_000
    # A user cannot set them.
    denied = await api.http.put("/api/v1/settings", json={"token_budget": 1}, headers=user)
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "admin_only")
    # A question may ask for less than the tenant's run budget, never more.
    above = {"question": "23 × 19?", "settings": {"token_budget": 60_000}}
    refused = await api.http.post("/api/v1/runs", json=above, headers=user)
    body = refused.json()["error"]
    assert (refused.status_code, body["code"]) == (422, "budget_above_tenant")
    assert body["field"] == "settings.token_budget"
    within = {"question": "23 × 19?", "settings": {"token_budget": 40_000}}
    started = await api.http.post("/api/v1/runs", json=within, headers=user)
    run = await wait_status(api, user_key, started.json()["run_id"])
    assert run["status"] == "done"


async def test_bad_budget_values_get_coded_errors_and_change_nothing(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin = api.auth(await api.key("t1", "root", KeyRole.ADMIN))
    before = (await api.http.get("/api/v1/settings", headers=admin)).json()
    for bad in (
        {"token_budget": 0},
        {"user_daily_cost_usd": -1},
        {"weight": 0},
        {"token_budget": "x"},
    ):
        resp = await api.http.put("/api/v1/settings", json=bad, headers=admin)
        assert (resp.status_code, resp.json()["error"]["code"]) == (422, "invalid_request"), bad
    user = api.auth(await api.key())
    ask = {"question": "23 × 19?", "settings": {"cost_budget_usd": 0}}
    resp = await api.http.post("/api/v1/runs", json=ask, headers=user)
    assert (resp.status_code, resp.json()["error"]["code"]) == (422, "invalid_request")
    assert (await api.http.get("/api/v1/settings", headers=admin)).json() == before


async def test_a_spent_budget_ends_the_run_and_usage_says_who_spent_what(
    start_api: StartApi,
) -> None:
    api = await start_api()
    admin_key = await api.key("t1", "root", KeyRole.ADMIN)
    admin = api.auth(admin_key)
    alice_key, bob_key = await api.key(), await api.key("t1", "bob")
    await api.http.put("/api/v1/settings", json={"user_daily_tokens": 100_000}, headers=admin)
    done = await _ask(api, alice_key, {})
    assert done["status"] == "done"
    tiny = await _ask(api, alice_key, {"token_budget": 5})
    assert tiny["status"] == "budget_exhausted" and tiny["partial"] is True
    [error] = [e for e in tiny["trace"] if e["type"] == "error"]
    assert error["code"] == "budget_exhausted" and error["budget"] == "run_tokens"
    alice = (await api.http.get("/api/v1/usage?period=day", headers=api.auth(alice_key))).json()
    bob = (await api.http.get("/api/v1/usage", headers=api.auth(bob_key))).json()
    tokens = done["usage"]["prompt_tokens"] + done["usage"]["completion_tokens"]
    assert (alice["scope"], alice["subject"], alice["tokens"]) == ("user", "alice", tokens)
    assert alice["limit_tokens"] == 100_000 and bob["tokens"] == 0
    # The tenant's month is for admins.
    denied = await api.http.get("/api/v1/usage?scope=tenant", headers=api.auth(bob_key))
    assert (denied.status_code, denied.json()["error"]["code"]) == (403, "admin_only")
    tenant = (await api.http.get("/api/v1/usage?period=month&scope=tenant", headers=admin)).json()
    assert (tenant["scope"], tenant["tokens"], tenant["since"][-2:]) == ("tenant", tokens, "01")
    bad = await api.http.get("/api/v1/usage?period=year", headers=admin)
    assert (bad.status_code, bad.json()["error"]["code"]) == (422, "invalid_request")


async def _ask(api: Any, key: str, settings: dict[str, Any]) -> dict[str, Any]:
    body = {"question": "23 × 19?", "settings": settings}
    started = await api.http.post("/api/v1/runs", json=body, headers=api.auth(key))
    assert started.status_code in (200, 201, 202), started.text
    return await wait_status(api, key, started.json()["run_id"])
