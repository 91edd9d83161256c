"""Settings that survive the page (issue 27, item 6): default vs no sources, custom mode,
the graph per accuracy, the Agents panel keeping what it does not show, and the
per-question "allow high-risk tools" switch."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bus import keys, wire
from bus.commands import AgentTask
from bus.store import KeyRole
from tests.e2e.web.conftest import Browser, StartWeb
from tests.e2e.web.pages import ask, open_signed_in, run_id_of, until_done


async def published(system: Any, run_id: str) -> Any:
    """The settings a run was published with (its intake command)."""
    for _, fields in await system.redis.xrange(keys.role_stream(keys.Role.INTAKE, 0)):
        command = wire.decode_command(fields)
        if command.run_id == run_id and isinstance(command.payload, AgentTask):
            return command.payload.state.settings
    raise AssertionError(f"run {run_id} was not published")


async def prefs(system: Any, key: str) -> dict[str, Any]:
    doc = (await system.http.get("/api/v1/settings", headers=system.auth(key))).json()
    return doc["preferences"]


async def save(page: Any) -> None:
    await page.get_by_role("button", name="Save").click()
    await page.locator(".save-row .note", has_text="saved").wait_for()


async def test_preferences_keep_default_sources_and_custom_mode(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Preferences").click()
    default = page.locator("input[name=sources_choice][value=default]")
    assert await default.is_checked()  # nothing stored: the defaults
    await page.locator("select[name=mode]").select_option("custom")
    await save(page)
    stored = await prefs(system, admin)
    assert stored["mode"] == "custom" and stored["sources"] is None  # not "no sources"

    await page.locator("input[name=sources_choice][value=only]").check()
    await save(page)
    assert (await prefs(system, admin))["sources"] == []  # no sources, chosen as such
    await page.get_by_role("tab", name="Network").click()
    await page.get_by_role("tab", name="Preferences").click()
    assert await page.locator("select[name=mode]").input_value() == "custom"
    assert await page.locator("input[name=sources_choice][value=only]").is_checked()
    await browser.shot(page, "preferences")

    # The composer keeps the tenant's custom mode: the question runs in custom mode.
    await page.reload()
    await page.wait_for_selector(".conn.online")
    assert await page.locator(".composer select[aria-label=Mode]").input_value() == "custom"
    turn = await ask(page, "What is 23 × 19?")
    await until_done(turn)
    assert (await published(system, await run_id_of(turn))).mode == "custom"
    await browser.shot(page, "custom")


async def test_the_agents_panel_keeps_models_and_draws_each_accuracy(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web(llm_models="m-default,m-small")
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    config = {"agents": [{"name": "critic", "model": "m-small"}]}
    put = await system.http.put("/api/v1/agents/config", json=config, headers=system.auth(admin))
    assert put.is_success, put.text
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Agents").click()
    await page.locator("svg.graph .node-critic").wait_for()
    assert await page.locator("svg.graph .node-verifier").count() == 0  # standard: no verifier
    await page.locator("select[aria-label='graph accuracy']").select_option("accurate")
    await page.locator("svg.graph .node-verifier").wait_for()
    await page.locator("details.agent", has_text="planner").locator("summary").click()
    await page.locator("textarea[name=planner]").fill("You are the planner. Plan in one step.")
    await save(page)
    saved = await system.http.get("/api/v1/agents/config", headers=system.auth(admin))
    agents = {a["name"]: a for a in saved.json()["agents"]}
    assert agents["planner"]["prompt"] == "You are the planner. Plan in one step."
    assert agents["critic"]["model"] == "m-small"  # the panel does not show it; kept
    await browser.shot(page, "agents")


async def test_the_agents_panel_draws_a_stored_team(start_web: StartWeb, browser: Browser) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    team = (Path(__file__).parents[3] / "docs" / "teams" / "triage.yaml").read_text()
    yaml = {"Content-Type": "application/yaml"}
    put = await system.http.put(
        "/api/v1/teams/triage", content=team, headers=system.auth(admin) | yaml
    )
    assert put.is_success, put.text
    page = await open_signed_in(system, browser, admin)
    await page.locator(".settings-open").click()
    await page.get_by_role("tab", name="Agents").click()
    await page.locator("svg.graph .node-critic").wait_for()
    await page.locator("select[aria-label='graph mode']").select_option("team:triage")
    for node in ("triage", "billing", "technical", "finalizer"):
        await page.locator(f"svg.graph .node-{node}").wait_for()
    assert await page.locator("svg.graph .node-critic").count() == 0
    labels = await page.locator("svg.graph .edge-label").all_text_contents()
    assert "answer category=billing" in labels
    await browser.shot(page, "team")


async def test_high_risk_tools_can_be_allowed_per_question(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    page = await open_signed_in(system, browser, await system.key())
    switch = page.get_by_label("Allow high-risk tools")
    assert not await switch.is_checked()  # the tenant's default: ask first
    turn = await ask(page, "What is 23 × 19?")
    await until_done(turn)
    assert (await published(system, await run_id_of(turn))).approve_high_risk is False
    await switch.check()
    turn = await ask(page, "What is 23 × 19 again?")
    await until_done(turn)
    assert (await published(system, await run_id_of(turn))).approve_high_risk is True
    await browser.shot(page)


async def test_a_tab_that_failed_to_load_loads_when_tried_again(
    start_web: StartWeb, browser: Browser
) -> None:
    system = await start_web()
    admin = await system.key("t1", "root", KeyRole.ADMIN)
    page = await open_signed_in(system, browser, admin)
    failures = 0

    async def fail_once(route: Any) -> None:
        # The server answers the Budgets tab's first read with an error, once.
        nonlocal failures
        if failures == 0:
            failures += 1
            await route.fulfill(
                status=503,
                content_type="application/json",
                body='{"error": {"code": "store_unavailable", "message": "store down"}}',
            )
        else:
            await route.continue_()

    await page.locator(".settings-open").click()
    await page.route("**/api/v1/settings", fail_once)
    await page.get_by_role("tab", name="Budgets").click()
    await page.locator(".panel .error", has_text="Budgets").wait_for()
    await browser.shot(page, "tab-failed")

    await page.get_by_role("button", name="Try again").click()
    await page.locator(".panel .usage-tenant").wait_for()  # the Budgets panel itself
    assert failures == 1
    assert await page.locator(".panel .error").count() == 0
    await browser.shot(page, "tab-loaded")
