"""Approval cards in a real browser: Approve, each egress decision, survival of a restart."""

from __future__ import annotations

import pytest

from bus import keys
from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import answer_text, ask, open_signed_in, run_id_of, until_done


async def test_approve_resumes_the_run_and_the_card_survives_a_restart(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    await system.put_settings(admin, mode="multi", human_gate=True)
    alice = await system.key()
    page = await open_signed_in(system, browser, alice)
    turn = await ask(page, "What is 23 × 19?")
    card = turn.locator(".card.answer-gate")
    await card.wait_for()
    assert "437" in await card.locator(".draft-preview").inner_text()
    assert "supports the answer" in await card.locator(".critique").inner_text()
    run_id = await run_id_of(turn)

    # Every process stops, the run's events are gone from Redis: the card comes back
    # from the store (the checkpoint), and Approve still resumes the run.
    system = await start_web(after=system)
    await system.redis.delete(keys.run_events(run_id, keys.shard_of(run_id, 1)))
    await page.reload()
    card = page.locator(".turn .card.answer-gate")
    await card.wait_for()
    assert "437" in await card.locator(".draft-preview").inner_text()
    await browser.shot(page, "paused")
    await card.get_by_role("button", name="Approve").click()
    turn = page.locator(".turn").first
    await until_done(turn)
    assert "approved" in await turn.locator(".decided").inner_text()
    assert "437" in await answer_text(turn)
    run = (await system.http.get(f"/api/v1/runs/{run_id}", headers=system.auth(alice))).json()
    assert run["status"] == "done"
    await browser.shot(page)


@pytest.mark.parametrize("label", ["Allow once", "Allow always", "Deny"])
async def test_each_egress_decision_resumes_the_run(
    start_web: StartWeb, browser: Browser, label: str
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    await system.put_settings(admin, mode="multi")
    alice = await system.key()
    page = await open_signed_in(system, browser, alice)
    turn = await ask(page, "[egress] Search the web for agentbus")
    card = turn.locator(".card.egress")
    await card.wait_for()
    assert await card.locator(".host").inner_text() == "html.duckduckgo.com"
    await card.get_by_role("button", name="More info").click()
    assert '"query": "agentbus"' in await card.locator(".args").inner_text()
    await browser.shot(page, "card")
    await card.get_by_role("button", name=label).click()
    await until_done(turn)
    assert await answer_text(turn) == "Done searching."
    decided = await turn.locator(".decided").inner_text()
    assert {"Allow once": "allowed once", "Allow always": "allowed always", "Deny": "denied"}[
        label
    ] in decided
    run_id = await run_id_of(turn)
    run = (await system.http.get(f"/api/v1/runs/{run_id}", headers=system.auth(alice))).json()
    assert run["status"] == "done"
    searches = [e for e in run["trace"] if e.get("tool") == "web_search"]
    codes = [e.get("code") for e in searches if e["type"] == "tool_result"]
    if label == "Deny":
        assert set(codes) == {"egress_blocked"}  # never ran (the judge's check is blocked too)
    else:
        assert codes[0] == "egress_blocked" and codes[1] != "egress_blocked"  # ran again
    prefs = (await system.http.get("/api/v1/settings", headers=system.auth(admin))).json()
    allowed = prefs["preferences"]["egress_hosts"] or []
    assert ("html.duckduckgo.com" in allowed) == (label == "Allow always")
    await browser.shot(page)
